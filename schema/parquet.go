package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"

	kzstd "github.com/klauspost/compress/zstd"
)

// zstdPages compresses Parquet pages with encoders kept for the process:
// parquet-go's codec keeps them in a pool the garbage collector empties, and
// each new encoder allocates and clears its history buffers, which took half
// of the compression time of an export.
var zstdPages = &keptZstd{enc: make(chan *kzstd.Encoder, 16)}

type keptZstd struct {
	zstd.Codec // decoding, name and format code
	enc        chan *kzstd.Encoder
}

func (c *keptZstd) CompressionCodec() format.CompressionCodec { return format.Zstd }

func (c *keptZstd) Encode(dst, src []byte) ([]byte, error) {
	var e *kzstd.Encoder
	select {
	case e = <-c.enc:
	default:
		var err error
		// The same settings as parquet-go's codec at its default level.
		e, err = kzstd.NewWriter(nil, kzstd.WithEncoderConcurrency(1), kzstd.WithEncoderLevel(kzstd.SpeedDefault),
			kzstd.WithZeroFrames(true), kzstd.WithEncoderCRC(false))
		if err != nil {
			return nil, fmt.Errorf("zstd encoder: %w", err)
		}
	}
	out := e.EncodeAll(src, dst[:0])
	select {
	case c.enc <- e:
	default:
	}
	return out, nil
}

// ParquetDialogue is the Parquet row of a Dialogue. messages is a
// LIST<STRUCT<role: STRING, content: STRING>>, the logical type Hugging Face
// datasets, pyarrow, pandas and DuckDB read as a list of {role, content}
// dicts, so a file loads directly as a chat dataset. The flat optional
// columns carry provenance; the nested, rarely-queried parts (labels,
// sources, per-message execution records and feedback, source id, extra
// fields) are JSON text columns so their shape can evolve without a schema
// migration and every reader sees plain strings.
type ParquetDialogue struct {
	ID            string           `parquet:"id"`
	Messages      []ParquetMessage `parquet:"messages,list"`
	Stage         string           `parquet:"stage,optional"`
	Method        string           `parquet:"method,optional"`
	Model         string           `parquet:"model,optional"`
	PromptVersion string           `parquet:"prompt_version,optional"`
	Sources       string           `parquet:"sources,optional"`      // JSON array of ids
	Labels        string           `parquet:"labels,optional"`       // JSON object of strings
	MessageMeta   string           `parquet:"message_meta,optional"` // JSON array aligned with messages: null or {"exec":..., "feedback":...}
	SourceID      string           `parquet:"source_id,optional"`    // the original id's JSON when not a string
	Extra         string           `parquet:"extra,optional"`        // JSON object of unmapped fields
}

// ParquetMessage is one element of the messages list.
type ParquetMessage struct {
	Role    string `parquet:"role"`
	Content string `parquet:"content"`
}

type messageMeta struct {
	Exec     *Execution `json:"exec,omitempty"`
	Feedback *Feedback  `json:"feedback,omitempty"`
}

// ToParquet converts a dialogue to its Parquet row.
func ToParquet(d *Dialogue) (ParquetDialogue, error) {
	row := ParquetDialogue{ID: d.ID, Stage: d.Stage, Method: d.Method, Model: d.Model, PromptVersion: d.Prompt, SourceID: string(d.SourceID)}
	row.Messages = make([]ParquetMessage, len(d.Messages))
	var metas []*messageMeta
	for i, m := range d.Messages {
		row.Messages[i] = ParquetMessage{Role: m.Role, Content: m.Content}
		if m.Exec != nil || m.Feedback != nil {
			if metas == nil {
				metas = make([]*messageMeta, len(d.Messages))
			}
			metas[i] = &messageMeta{Exec: m.Exec, Feedback: m.Feedback}
		}
	}
	enc := func(v any, dst *string) error {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("dialogue %s: %w", d.ID, err)
		}
		*dst = string(b)
		return nil
	}
	if metas != nil {
		if err := enc(metas, &row.MessageMeta); err != nil {
			return row, err
		}
	}
	if len(d.Sources) > 0 {
		if err := enc(d.Sources, &row.Sources); err != nil {
			return row, err
		}
	}
	if len(d.Labels) > 0 {
		if err := enc(d.Labels, &row.Labels); err != nil {
			return row, err
		}
	}
	if len(d.Extra) > 0 {
		if err := enc(d.Extra, &row.Extra); err != nil {
			return row, err
		}
	}
	return row, nil
}

// FromParquet converts a Parquet row back to a dialogue.
func FromParquet(row *ParquetDialogue) (Dialogue, error) {
	d := Dialogue{ID: row.ID, Stage: row.Stage, Method: row.Method, Model: row.Model, Prompt: row.PromptVersion}
	if row.SourceID != "" {
		d.SourceID = json.RawMessage(row.SourceID)
	}
	d.Messages = make([]Message, len(row.Messages))
	for i, m := range row.Messages {
		d.Messages[i] = Message{Role: m.Role, Content: m.Content}
	}
	dec := func(col, s string, v any) error {
		if s == "" {
			return nil
		}
		if err := json.Unmarshal([]byte(s), v); err != nil {
			return fmt.Errorf("column %s: %w", col, err)
		}
		return nil
	}
	var metas []*messageMeta
	if err := dec("message_meta", row.MessageMeta, &metas); err != nil {
		return d, err
	}
	if metas != nil && len(metas) != len(d.Messages) {
		return d, fmt.Errorf("column message_meta: %d entries for %d messages", len(metas), len(d.Messages))
	}
	for i, mm := range metas {
		if mm != nil {
			d.Messages[i].Exec, d.Messages[i].Feedback = mm.Exec, mm.Feedback
		}
	}
	if err := dec("sources", row.Sources, &d.Sources); err != nil {
		return d, err
	}
	if err := dec("labels", row.Labels, &d.Labels); err != nil {
		return d, err
	}
	if err := dec("extra", row.Extra, &d.Extra); err != nil {
		return d, err
	}
	return d, nil
}

// parquetWriter buffers rows of type T and flushes a row group whenever the
// buffered content passes the row-group byte budget, so memory stays flat
// however many rows the file gets.
type parquetWriter[T any] struct {
	af       *AtomicFile
	pw       *parquet.GenericWriter[T]
	buf      []T
	size     func(*T) int64
	pending  int64
	rgBudget int64
}

func newParquetWriter[T any](path string, size func(*T) int64, opts ...Option) (*parquetWriter[T], error) {
	o := buildOptions(opts)
	var codec parquet.WriterOption
	switch o.parquetCodec {
	case "", "snappy":
		codec = parquet.Compression(&parquet.Snappy)
	case "zstd":
		codec = parquet.Compression(zstdPages)
	default:
		return nil, fmt.Errorf("unknown Parquet compression %q (want snappy or zstd)", o.parquetCodec)
	}
	af, err := CreateAtomic(path)
	if err != nil {
		return nil, err
	}
	pw := parquet.NewGenericWriter[T](af, codec, parquet.CreatedBy("codefeedback", "1", ""))
	return &parquetWriter[T]{af: af, pw: pw, size: size, rgBudget: o.rowGroupBytes}, nil
}

// nativeParquetWriter writes the native layout (every field).
type nativeParquetWriter struct {
	*parquetWriter[ParquetDialogue]
}

func createParquetDialogues(path string, opts ...Option) (nativeParquetWriter, error) {
	w, err := newParquetWriter(path, rowBytes, opts...)
	return nativeParquetWriter{w}, err
}

func (w nativeParquetWriter) Write(d Dialogue) error {
	row, err := ToParquet(&d)
	if err != nil {
		return err
	}
	return w.add(row)
}

func (w *parquetWriter[T]) add(row T) error {
	w.buf = append(w.buf, row)
	w.pending += w.size(&w.buf[len(w.buf)-1])
	if len(w.buf) >= 1024 {
		if err := w.drain(); err != nil {
			return err
		}
	}
	if w.pending >= w.rgBudget {
		if err := w.drain(); err != nil {
			return err
		}
		if err := w.pw.Flush(); err != nil {
			return fmt.Errorf("%s: flush row group: %w", w.af.final, err)
		}
		w.pending = 0
	}
	return nil
}

func rowBytes(r *ParquetDialogue) int64 {
	n := len(r.ID) + len(r.Stage) + len(r.Method) + len(r.Model) + len(r.PromptVersion) + len(r.Sources) + len(r.Labels) + len(r.MessageMeta) + len(r.SourceID) + len(r.Extra)
	return int64(n) + messagesBytes(r.Messages)
}

func messagesBytes(ms []ParquetMessage) int64 {
	n := 0
	for _, m := range ms {
		n += len(m.Role) + len(m.Content) + 8
	}
	return int64(n)
}

func (w *parquetWriter[T]) drain() error {
	if len(w.buf) == 0 {
		return nil
	}
	if _, err := w.pw.Write(w.buf); err != nil {
		return fmt.Errorf("%s: write rows: %w", w.af.final, err)
	}
	clear(w.buf)
	w.buf = w.buf[:0]
	return nil
}

func (w *parquetWriter[T]) Close() error {
	if err := w.drain(); err != nil {
		w.af.Abort()
		return err
	}
	if err := w.pw.Close(); err != nil {
		w.af.Abort()
		return fmt.Errorf("%s: close parquet: %w", w.af.final, err)
	}
	return w.af.Commit()
}

func (w *parquetWriter[T]) Abort() { w.af.Abort() }

// parquetReader streams dialogues from a Parquet file a batch at a time,
// whichever layout the file has (native, or Code-Feedback with a string or
// an integer id).
type parquetReader struct {
	path string
	f    *os.File // nil for a row group of a file opened apart
	rows rowSource
	row  int
}

// rowSource reads the next row of one layout as a dialogue; raw renders the
// row for a RecordError.
type rowSource interface {
	next() (d Dialogue, raw func() []byte, err error)
	close() error
}

type typedRows[T any] struct {
	path string
	pr   *parquet.GenericReader[T]
	buf  []T
	i, n int
	eof  bool
	conv func(*T) (Dialogue, error)
}

func (t *typedRows[T]) next() (Dialogue, func() []byte, error) {
	if t.i == t.n {
		if t.eof {
			return Dialogue{}, nil, io.EOF
		}
		clear(t.buf)
		n, err := t.pr.Read(t.buf)
		t.i, t.n = 0, n
		if err == io.EOF {
			t.eof = true
		} else if err != nil {
			t.eof = true
			return Dialogue{}, nil, err
		}
		if n == 0 {
			if t.eof {
				return Dialogue{}, nil, io.EOF
			}
			return Dialogue{}, nil, errors.New("reader made no progress")
		}
	}
	row := &t.buf[t.i]
	t.i++
	d, err := t.conv(row)
	return d, func() []byte { b, _ := json.Marshal(row); return b }, err
}

func (t *typedRows[T]) close() error { return t.pr.Close() }

func newTypedRows[T any](path string, rg parquet.RowGroup, conv func(*T) (Dialogue, error)) *typedRows[T] {
	return &typedRows[T]{path: path, pr: parquet.NewGenericRowGroupReader[T](rg), buf: make([]T, 64), conv: conv}
}

// rowsOf reads one row group of a file of the given layout.
func rowsOf(path string, layout ExportFormat, rg parquet.RowGroup) rowSource {
	switch layout {
	case ExportNative:
		return newTypedRows(path, rg, FromParquet)
	case "int":
		return newTypedRows(path, rg, func(row *CodeFeedbackIntRow) (Dialogue, error) {
			return codeFeedbackDialogue(strconv.FormatInt(row.ID, 10), json.RawMessage(strconv.FormatInt(row.ID, 10)), row.Messages), nil
		})
	}
	return newTypedRows(path, rg, func(row *CodeFeedbackRow) (Dialogue, error) {
		return codeFeedbackDialogue(row.ID, nil, row.Messages), nil
	})
}

// OpenParquet opens path as a Parquet file of any schema; pf reads from
// f, which the caller closes when done with pf.
func OpenParquet(path string) (f *os.File, pf *parquet.File, err error) {
	f, err = os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open input: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	pf, err = parquet.OpenFile(f, st.Size())
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: not a readable Parquet file (truncated or corrupt?): %w", path, err)
	}
	return f, pf, nil
}

// openParquetFile opens a dialogue Parquet file and checks its schema.
func openParquetFile(path string, o options) (*os.File, *parquet.File, error) {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return nil, nil, err
	}
	if err := checkDialogueSchema(pf.Schema()); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if pf.NumRows() == 0 && !o.allowEmpty {
		f.Close()
		return nil, nil, fmt.Errorf("%s: empty file (no records)", path)
	}
	return f, pf, nil
}

// parquetRowGroup is a reader of one row group; rows are numbered from the
// file's start. Row groups of one file may be read concurrently.
type parquetRowGroup = parquetReader

// openParquetRowGroups opens a reader per row group of path; closing f
// (after every reader) releases the file.
func openParquetRowGroups(path string, opts ...Option) (f *os.File, rgs []*parquetRowGroup, err error) {
	f, pf, err := openParquetFile(path, buildOptions(opts))
	if err != nil {
		return nil, nil, err
	}
	layout := parquetLayout(pf.Schema())
	var first int
	for _, rg := range pf.RowGroups() {
		rgs = append(rgs, &parquetReader{path: path, rows: rowsOf(path, layout, rg), row: first})
		first += int(rg.NumRows())
	}
	return f, rgs, nil
}

func openParquetDialogues(path string, opts ...Option) (*parquetReader, error) {
	f, pf, err := openParquetFile(path, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	return &parquetReader{path: path, f: f, rows: rowsOf(path, parquetLayout(pf.Schema()), parquet.MultiRowGroup(pf.RowGroups()...))}, nil
}

// checkDialogueSchema rejects Parquet files that lack the dialogue columns,
// instead of silently reading empty rows.
func checkDialogueSchema(s *parquet.Schema) error {
	for _, col := range []string{"id", "messages"} {
		if _, ok := s.Lookup(col); !ok {
			if _, ok := lookupPrefix(s, col); !ok {
				return fmt.Errorf("not a dialogue Parquet file: no %q column", col)
			}
		}
	}
	return nil
}

func lookupPrefix(s *parquet.Schema, col string) ([]string, bool) {
	for _, p := range s.Columns() {
		if len(p) > 0 && p[0] == col {
			return p, true
		}
	}
	return nil, false
}

func (r *parquetReader) Read() (Dialogue, error) {
	d, raw, err := r.rows.next()
	if err == io.EOF {
		return d, err
	}
	if err != nil && raw == nil {
		return d, fmt.Errorf("%s: row %d: %w", r.path, r.row+1, err)
	}
	r.row++
	if err == nil {
		err = d.Validate()
	}
	if err != nil {
		return d, &RecordError{File: r.path, Unit: "row", Line: r.row, Reason: err.Error(), Raw: raw()}
	}
	return d, nil
}

func (r *parquetReader) Close() error {
	err := r.rows.close()
	if r.f != nil {
		err = errors.Join(err, r.f.Close())
	}
	return err
}
