package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
)

// Reader streams records of type T from a file. Read returns io.EOF at the
// end; a *RecordError for one bad record, after which reading may continue;
// any other error is fatal. Not safe for concurrent use.
type Reader[T any] interface {
	Read() (T, error)
	Close() error
}

// Writer streams records of type T into a file that appears under its final
// name only when Close succeeds. Abort (or a failed Close) removes the
// temporary file and leaves any earlier file under the final name untouched.
type Writer[T any] interface {
	Write(T) error
	Close() error
	Abort()
}

// IsParquet reports whether path names a Parquet file.
func IsParquet(path string) bool {
	return strings.HasSuffix(path, ".parquet")
}

// parquetStream opens path's Parquet dialogue reader or writer as S
// (Reader[T] or Writer[T]). It refuses records of type T other than
// Dialogue: the Parquet schema is the dialogues'.
func parquetStream[T, S any](path string, open func() (any, error)) (S, error) {
	var none S
	if _, ok := any(new(T)).(*Dialogue); !ok {
		return none, fmt.Errorf("%s: Parquet files hold dialogues only, not %T", path, *new(T))
	}
	s, err := open()
	if err != nil {
		return none, err
	}
	return s.(S), nil
}

// OpenReader opens path by its extension: .parquet (T must be Dialogue), or
// JSONL / JSON array, plain, .gz or .zst.
func OpenReader[T any](path string, opts ...Option) (Reader[T], error) {
	if IsParquet(path) {
		return parquetStream[T, Reader[T]](path, func() (any, error) { return openParquetDialogues(path, opts...) })
	}
	raw, err := OpenRaw(path, opts...)
	if err != nil {
		return nil, err
	}
	return &jsonlReader[T]{raw: raw}, nil
}

// CreateWriter creates path by its extension: .parquet (T must be Dialogue),
// else JSONL, plain, .gz or .zst.
func CreateWriter[T any](path string, opts ...Option) (Writer[T], error) {
	if IsParquet(path) {
		return parquetStream[T, Writer[T]](path, func() (any, error) { return createParquetDialogues(path, opts...) })
	}
	return newJSONLWriter[T](path)
}

// All ranges over a Reader, yielding each record or error; it stops after a
// fatal error or when ctx is done. RecordErrors are yielded and the range
// continues unless the loop body breaks.
func All[T any](ctx context.Context, r Reader[T]) iter.Seq2[T, error] {
	return each(ctx, r.Read)
}

// each is All over any function that reads the next record (io.EOF at the
// end, a RecordError for a bad record the stream goes on after).
func each[T any](ctx context.Context, next func() (T, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for {
			if err := ctx.Err(); err != nil {
				var zero T
				yield(zero, err)
				return
			}
			v, err := next()
			if err == io.EOF {
				return
			}
			var re *RecordError
			if err != nil && !errors.As(err, &re) {
				yield(v, err)
				return
			}
			if !yield(v, err) {
				return
			}
		}
	}
}

// ReadAll reads every record of a small file, failing on the first error.
func ReadAll[T any](path string, opts ...Option) ([]T, error) {
	r, err := OpenReader[T](path, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []T
	for v, err := range All(context.Background(), r) {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// WriteAll writes records to path atomically.
func WriteAll[T any](path string, recs []T, opts ...Option) error {
	w, err := CreateWriter[T](path, opts...)
	if err != nil {
		return err
	}
	for _, v := range recs {
		if err := w.Write(v); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}
