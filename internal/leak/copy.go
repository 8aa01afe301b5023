package leak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/codefeedback/codefeedback/schema"
)

// copyKept copies the JSONL or JSON-array file at in to out without the
// records for which drop returns true, every kept record byte for byte: a
// JSONL line keeps its exact bytes and line ending (CRLF stays CRLF), blank
// lines and a byte order mark stay; a JSON array stays an array whose kept
// elements are their original bytes. Records are numbered as RawRecords
// numbers them (non-blank lines, or array elements, from 0). Compression
// follows each file's extension (.gz, .zst). out appears only when
// complete. It returns the number of records kept.
func copyKept(ctx context.Context, in, out string, drop func(seq int, rec []byte) (bool, error)) (int, error) {
	f, err := os.Open(in)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r, closeR, err := decompressed(f, schema.CompressionOf(in))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", in, err)
	}
	defer closeR()
	br := bufio.NewReaderSize(r, 1<<16)

	af, err := schema.CreateAtomic(out)
	if err != nil {
		return 0, err
	}
	defer af.Abort() // no-op after Commit
	bw := bufio.NewWriterSize(af, 1<<16)
	zw, err := compressed(bw, schema.CompressionOf(out))
	if err != nil {
		return 0, err
	}

	lead, err := leadingSpace(br)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", in, err)
	}
	var kept int
	if c, _ := br.Peek(1); len(c) == 1 && c[0] == '[' {
		kept, err = copyArray(ctx, br, zw, lead, drop)
	} else {
		kept, err = copyLines(ctx, br, zw, lead, drop)
	}
	if err != nil {
		return 0, fmt.Errorf("%s: %w", in, err)
	}
	if err := zw.Close(); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return kept, af.Commit()
}

// leadingSpace reads a byte order mark and whitespace before the first
// record, to be written back unchanged.
func leadingSpace(br *bufio.Reader) ([]byte, error) {
	var lead []byte
	if b, _ := br.Peek(3); bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		lead = append(lead, b...)
		br.Discard(3)
	}
	for {
		c, err := br.ReadByte()
		if err == io.EOF {
			return lead, nil
		}
		if err != nil {
			return nil, err
		}
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return lead, br.UnreadByte()
		}
		lead = append(lead, c)
	}
}

func copyLines(ctx context.Context, br *bufio.Reader, w io.Writer, lead []byte, drop func(int, []byte) (bool, error)) (int, error) {
	if _, err := w.Write(lead); err != nil {
		return 0, err
	}
	var line []byte
	seq, kept := 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		line = line[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			line = append(line, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return 0, err
		}
		if len(line) > 0 {
			rec := bytes.TrimSpace(line)
			keep := true
			if len(rec) > 0 {
				d, derr := drop(seq, rec)
				if derr != nil {
					return 0, derr
				}
				keep = !d
				if keep {
					kept++
				}
				seq++
			}
			if keep {
				if _, werr := w.Write(line); werr != nil {
					return 0, werr
				}
			}
		}
		if err == io.EOF {
			return kept, nil
		}
	}
}

func copyArray(ctx context.Context, br *bufio.Reader, w io.Writer, lead []byte, drop func(int, []byte) (bool, error)) (int, error) {
	dec := json.NewDecoder(br)
	if _, err := dec.Token(); err != nil { // '['
		return 0, err
	}
	if _, err := w.Write(lead); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(w, "["); err != nil {
		return 0, err
	}
	seq, kept := 0, 0
	for dec.More() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		var raw json.RawMessage // the element's exact bytes
		if err := dec.Decode(&raw); err != nil {
			return 0, fmt.Errorf("malformed JSON array element %d: %w", seq+1, err)
		}
		d, err := drop(seq, raw)
		if err != nil {
			return 0, err
		}
		seq++
		if d {
			continue
		}
		sep := "\n"
		if kept > 0 {
			sep = ",\n"
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return 0, err
		}
		if _, err := w.Write(raw); err != nil {
			return 0, err
		}
		kept++
	}
	if _, err := dec.Token(); err != nil {
		return 0, fmt.Errorf("JSON array not closed: %w", err)
	}
	_, err := io.WriteString(w, "\n]\n")
	return kept, err
}

func decompressed(r io.Reader, c schema.Compression) (io.Reader, func(), error) {
	switch c {
	case schema.CompressGzip:
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("gzip header: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	case schema.CompressZstd:
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd header: %w", err)
		}
		return zr, zr.Close, nil
	}
	return r, func() {}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func compressed(w io.Writer, c schema.Compression) (io.WriteCloser, error) {
	switch c {
	case schema.CompressGzip:
		return gzip.NewWriter(w), nil
	case schema.CompressZstd:
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	}
	return nopCloser{w}, nil
}
