package schema

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// Compression of a JSONL stream, chosen by the file name's extension.
type Compression int

const (
	CompressNone Compression = iota
	CompressGzip
	CompressZstd
)

// CompressionOf returns the compression a path's extension names (.gz, .zst).
func CompressionOf(path string) Compression {
	switch {
	case strings.HasSuffix(path, ".gz"):
		return CompressGzip
	case strings.HasSuffix(path, ".zst"), strings.HasSuffix(path, ".zstd"):
		return CompressZstd
	}
	return CompressNone
}

// decompress wraps r by c. The returned closer releases decoder resources
// (not r itself).
func decompress(r io.Reader, c Compression) (io.Reader, func(), error) {
	switch c {
	case CompressGzip:
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
		if err != nil {
			return nil, nil, fmt.Errorf("gzip header: %w", err)
		}
		return zr, func() { zr.Close() }, nil
	case CompressZstd:
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nil, fmt.Errorf("zstd header: %w", err)
		}
		return zr, zr.Close, nil
	}
	return r, func() {}, nil
}

// compressor wraps w by c; Close flushes the compressed stream (not w).
func compressor(w io.Writer, c Compression) (io.WriteCloser, error) {
	switch c {
	case CompressGzip:
		return gzip.NewWriter(w), nil
	case CompressZstd:
		return zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
	}
	return nopWriteCloser{w}, nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// openInput opens path and decompresses it by its name: dr reads the
// plain bytes; closeDec, then f.Close, release it.
func openInput(path string) (f *os.File, dr io.Reader, closeDec func(), err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open input: %w", err)
	}
	dr, closeDec, err = decompress(f, CompressionOf(path))
	if err != nil {
		f.Close()
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, dr, closeDec, nil
}
