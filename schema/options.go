package schema

// Option adjusts how a file is read or written.
type Option func(*options)

type options struct {
	maxRecord     int
	allowEmpty    bool
	parquetCodec  string
	rowGroupBytes int64
}

// DefaultMaxRecordBytes bounds one JSONL line (or JSON array element). Lines
// are read without bufio.Scanner's 64 KiB limit; this cap turns a runaway
// line (a binary file, a missing newline in a huge dump) into a clear error
// instead of exhausting memory.
const DefaultMaxRecordBytes = 256 << 20

// DefaultRowGroupBytes is the uncompressed size at which a Parquet writer
// flushes a row group: big enough for good compression and fast scans of
// large files, small enough that a writer's memory does not grow with the file.
const DefaultRowGroupBytes = 64 << 20

func buildOptions(opts []Option) options {
	o := options{maxRecord: DefaultMaxRecordBytes, parquetCodec: "snappy", rowGroupBytes: DefaultRowGroupBytes}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// MaxRecordBytes sets the largest accepted record; larger ones are a RecordError.
func MaxRecordBytes(n int) Option { return func(o *options) { o.maxRecord = n } }

// AllowEmpty makes an input with no records a valid, empty stream instead of
// an error.
func AllowEmpty() Option { return func(o *options) { o.allowEmpty = true } }

// ParquetCompression selects the Parquet page codec: "snappy" (default) or "zstd".
func ParquetCompression(codec string) Option { return func(o *options) { o.parquetCodec = codec } }

// RowGroupBytes sets the uncompressed size at which a Parquet row group is flushed.
func RowGroupBytes(n int64) Option { return func(o *options) { o.rowGroupBytes = n } }
