package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// RecordError is a problem with one record. Reading can continue past it:
// the next Read returns the next record. File and Line locate it (Line is the
// 1-based line of a JSONL file, element of a JSON array, data row of a CSV, or
// row of a Parquet file, as Unit says).
type RecordError struct {
	File   string
	Unit   string // "line", "element", "row"
	Line   int
	Reason string
	Raw    []byte // the record as read, for a rejects file
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%s: %s %d: %s", e.File, e.Unit, e.Line, e.Reason)
}

// RawReader streams the records of a JSONL file (plain, .gz or .zst) or of a
// file holding one JSON array, as raw JSON, one at a time. Memory is bounded
// by the largest record, not the record count. Not safe for concurrent use.
type RawReader struct {
	path      string
	f         *os.File
	closeDec  func()
	br        *bufio.Reader
	dec       *json.Decoder // array mode
	array     bool
	line      int
	n         int
	buf       []byte
	lastRaw   []byte
	maxRecord int
	allowEmpt bool
	done      bool
}

// OpenRaw opens path for streaming. Whether it is JSONL or a JSON array is
// decided by the first non-space byte.
func OpenRaw(path string, opts ...Option) (*RawReader, error) {
	o := buildOptions(opts)
	f, dr, closeDec, err := openInput(path)
	if err != nil {
		return nil, err
	}
	r := &RawReader{path: path, f: f, closeDec: closeDec, br: bufio.NewReaderSize(dr, 1<<16), maxRecord: o.maxRecord, allowEmpt: o.allowEmpty}
	first, err := r.firstByte()
	if err != nil && err != io.EOF {
		r.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if first == '[' {
		r.array = true
		r.dec = json.NewDecoder(r.br)
		if _, err := r.dec.Token(); err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return r, nil
}

func (r *RawReader) firstByte() (byte, error) {
	if b, _ := r.br.Peek(3); bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		r.br.Discard(3) // UTF-8 byte order mark
	}
	for {
		b, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			if b == '\n' {
				r.line++
			}
			continue
		}
		return b, r.br.UnreadByte()
	}
}

// Path is the file being read.
func (r *RawReader) Path() string { return r.path }

// Line is the position of the record last returned (see RecordError.Line).
func (r *RawReader) Line() int { return r.line }

// Unit names what Line counts: "line" for JSONL, "element" for a JSON array.
func (r *RawReader) Unit() string {
	if r.array {
		return "element"
	}
	return "line"
}

// Errorf makes a RecordError for the record last returned.
func (r *RawReader) Errorf(format string, args ...any) *RecordError {
	return &RecordError{File: r.path, Unit: r.Unit(), Line: r.line, Reason: fmt.Sprintf(format, args...), Raw: r.lastRaw}
}

// Next returns the next record. The slice is valid until the next call. At
// the end it returns io.EOF; a bad record (invalid UTF-8, too large) is a
// *RecordError and reading may continue; any other error (truncated
// compressed stream, broken JSON array, I/O) is fatal and names file and line.
// An input with no records at all is an error unless AllowEmpty was given.
func (r *RawReader) Next() (json.RawMessage, error) {
	if r.done {
		return nil, io.EOF
	}
	var rec []byte
	var err error
	if r.array {
		rec, err = r.nextElement()
	} else {
		rec, err = r.nextLine()
	}
	if err == io.EOF {
		r.done = true
		if r.n == 0 && !r.allowEmpt {
			return nil, fmt.Errorf("%s: empty file (no records)", r.path)
		}
		return nil, io.EOF
	}
	if err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			r.n++
			return nil, err
		}
		r.done = true
		return nil, fmt.Errorf("%s: %s %d: %w", r.path, r.Unit(), r.line+1, err)
	}
	r.n++
	r.lastRaw = rec
	if !utf8.Valid(rec) {
		return nil, r.Errorf("invalid UTF-8")
	}
	return rec, nil
}

func (r *RawReader) nextLine() ([]byte, error) {
	for {
		r.buf = r.buf[:0]
		tooBig := false
		for {
			chunk, err := r.br.ReadSlice('\n')
			if len(r.buf)+len(chunk) > r.maxRecord {
				tooBig = true
			} else {
				r.buf = append(r.buf, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF {
				if len(r.buf) == 0 && !tooBig {
					return nil, io.EOF
				}
				break
			}
			if err != nil {
				return nil, err
			}
			break
		}
		r.line++
		if tooBig {
			r.lastRaw = nil
			return nil, r.Errorf("record larger than the %d-byte limit", r.maxRecord)
		}
		line := bytes.TrimSpace(r.buf)
		if len(line) == 0 {
			continue
		}
		return line, nil
	}
}

func (r *RawReader) nextElement() ([]byte, error) {
	if !r.dec.More() {
		if _, err := r.dec.Token(); err != nil { // closing ']'
			return nil, fmt.Errorf("JSON array not closed: %w", err)
		}
		return nil, io.EOF
	}
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("malformed JSON array element: %w", err)
	}
	r.line++
	if len(raw) > r.maxRecord {
		r.lastRaw = nil
		return nil, r.Errorf("record larger than the %d-byte limit", r.maxRecord)
	}
	return raw, nil
}

// Close releases the file.
func (r *RawReader) Close() error {
	if r.closeDec != nil {
		r.closeDec()
	}
	return r.f.Close()
}

// jsonlReader decodes each raw record into T and validates it when T (by
// pointer) has a Validate() error method.
type jsonlReader[T any] struct {
	raw *RawReader
}

func (j *jsonlReader[T]) Read() (T, error) {
	var v T
	rec, err := j.raw.Next()
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(rec, &v); err != nil {
		return v, j.raw.Errorf("malformed JSON: %v", err)
	}
	if val, ok := any(&v).(interface{ Validate() error }); ok {
		if err := val.Validate(); err != nil {
			return v, j.raw.Errorf("%v", err)
		}
	}
	return v, nil
}

func (j *jsonlReader[T]) Close() error { return j.raw.Close() }

// jsonlWriter writes one JSON object per line through optional compression
// into an atomic file.
type jsonlWriter[T any] struct {
	af  *AtomicFile
	zw  io.WriteCloser
	bw  *bufio.Writer
	enc *json.Encoder
}

func newJSONLWriter[T any](path string) (*jsonlWriter[T], error) {
	af, err := CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	zw, err := compressor(af, CompressionOf(path))
	if err != nil {
		af.Abort()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	bw := bufio.NewWriterSize(zw, 1<<16)
	enc := json.NewEncoder(bw)
	// Code is full of <, > and &; keep it readable.
	enc.SetEscapeHTML(false)
	return &jsonlWriter[T]{af: af, zw: zw, bw: bw, enc: enc}, nil
}

func (w *jsonlWriter[T]) Write(v T) error {
	if err := w.enc.Encode(v); err != nil {
		return fmt.Errorf("%s: write record: %w", w.af.final, err)
	}
	return nil
}

func (w *jsonlWriter[T]) Close() error {
	if err := w.bw.Flush(); err != nil {
		w.af.Abort()
		return fmt.Errorf("%s: %w", w.af.final, err)
	}
	if err := w.zw.Close(); err != nil {
		w.af.Abort()
		return fmt.Errorf("%s: %w", w.af.final, err)
	}
	return w.af.Commit()
}

func (w *jsonlWriter[T]) Abort() { w.af.Abort() }
