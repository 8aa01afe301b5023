package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// CodeFeedbackRow is a Parquet row of the Code-Feedback layout with string
// ids: id, and messages as LIST<STRUCT<role, content>> with user and
// assistant roles only.
type CodeFeedbackRow struct {
	ID       string           `parquet:"id"`
	Messages []ParquetMessage `parquet:"messages,list"`
}

// CodeFeedbackIntRow is the same row for sources with integer ids
// (Code-Feedback's own): id is INT64, as on the Hub.
type CodeFeedbackIntRow struct {
	ID       int64            `parquet:"id"`
	Messages []ParquetMessage `parquet:"messages,list"`
}

// codeFeedbackParquet writes the Code-Feedback layout. The id column's type
// is chosen from the first dialogue: INT64 when its original id is an
// integer, else STRING; a later dialogue that does not fit is an error
// naming it (a Parquet column has one type).
type codeFeedbackParquet struct {
	path string
	opts []Option
	str  *parquetWriter[CodeFeedbackRow]
	num  *parquetWriter[CodeFeedbackIntRow]
}

func createCodeFeedbackParquet(path string, opts ...Option) (*codeFeedbackParquet, error) {
	o := buildOptions(opts)
	if o.parquetCodec != "" && o.parquetCodec != "snappy" && o.parquetCodec != "zstd" {
		return nil, fmt.Errorf("unknown Parquet compression %q (want snappy or zstd)", o.parquetCodec)
	}
	return &codeFeedbackParquet{path: path, opts: opts}, nil
}

// intID returns d's original id when it is a JSON integer.
func intID(d *Dialogue) (int64, bool) {
	if len(d.SourceID) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d.SourceID), 10, 64)
	return n, err == nil
}

func (w *codeFeedbackParquet) Write(d *Dialogue) error {
	cf := ToCodeFeedback(d)
	msgs := make([]ParquetMessage, len(cf.Messages))
	for i, m := range cf.Messages {
		msgs[i] = ParquetMessage(m)
	}
	n, isInt := intID(d)
	if w.str == nil && w.num == nil {
		var err error
		if isInt {
			w.num, err = newParquetWriter(w.path, func(r *CodeFeedbackIntRow) int64 { return 8 + messagesBytes(r.Messages) }, w.opts...)
		} else {
			w.str, err = newParquetWriter(w.path, func(r *CodeFeedbackRow) int64 { return int64(len(r.ID)) + messagesBytes(r.Messages) }, w.opts...)
		}
		if err != nil {
			return err
		}
	}
	if w.num != nil {
		if !isInt {
			return fmt.Errorf("dialogue %s: its id is not an integer, but the file's id column is INT64 (its first dialogue had an integer id); export the two kinds apart", d.ID)
		}
		return w.num.add(CodeFeedbackIntRow{ID: n, Messages: msgs})
	}
	id := d.ID
	if len(d.SourceID) > 0 {
		var s string
		if json.Unmarshal(d.SourceID, &s) == nil {
			id = s
		} else {
			id = string(d.SourceID)
		}
	}
	return w.str.add(CodeFeedbackRow{ID: id, Messages: msgs})
}

func (w *codeFeedbackParquet) Close() error {
	switch {
	case w.num != nil:
		return w.num.Close()
	case w.str != nil:
		return w.str.Close()
	}
	// No rows: an empty file of the string layout.
	s, err := newParquetWriter(w.path, func(*CodeFeedbackRow) int64 { return 0 }, w.opts...)
	if err != nil {
		return err
	}
	return s.Close()
}

func (w *codeFeedbackParquet) Abort() {
	switch {
	case w.num != nil:
		w.num.Abort()
	case w.str != nil:
		w.str.Abort()
	}
}

// parquetLayout tells the layouts apart: ExportNative when the file has any
// provenance column, "int" for the Code-Feedback layout with INT64 ids,
// else ExportCodeFeedback.
func parquetLayout(s *parquet.Schema) ExportFormat {
	for _, col := range []string{"message_meta", "stage", "labels", "sources", "source_id", "extra"} {
		if _, ok := s.Lookup(col); ok {
			return ExportNative
		}
	}
	if c, ok := s.Lookup("id"); ok && c.Node.Type().Kind() == parquet.Int64 {
		return "int"
	}
	return ExportCodeFeedback
}

// codeFeedbackDialogue is a dialogue read from the Code-Feedback layout:
// execution results stay user turns, as when a Code-Feedback JSONL file is
// imported.
func codeFeedbackDialogue(id string, sourceID json.RawMessage, ms []ParquetMessage) Dialogue {
	d := Dialogue{ID: id, SourceID: sourceID, Messages: make([]Message, len(ms))}
	for i, m := range ms {
		d.Messages[i] = Message{Role: m.Role, Content: m.Content}
	}
	if strings.TrimSpace(d.ID) == "" {
		d.ID = DialogueID(d.Messages)
	}
	return d
}
