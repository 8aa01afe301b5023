package schema

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"strings"
	"unicode/utf8"
)

// ImportOptions choose how an input file is read.
type ImportOptions struct {
	Format  Format            // FormatAuto (or "") detects it
	Mapping map[string]string // target field -> source field (see ParseMapping)
	// AllowDuplicates turns off the duplicate-id check (which keeps one
	// 8-byte hash per record in memory).
	AllowDuplicates bool
	Options         []Option
}

// Record is one imported item: a Problem (benchmarks, query pools) or a
// Dialogue (Code-Feedback and this tool's own dialogue files).
type Record struct {
	Problem  *Problem
	Dialogue *Dialogue
}

// ID is the record's id.
func (r Record) ID() string {
	if r.Dialogue != nil {
		return r.Dialogue.ID
	}
	return r.Problem.ID
}

// Source streams records from an input file through the adapter of its
// format. Memory is bounded by the largest record (plus the duplicate-id
// set). Not safe for concurrent use.
type Source struct {
	path    string
	format  Format
	ad      *adapter
	raw     *RawReader
	csv     *csvSource
	pending json.RawMessage // the first record, read for detection
	seen    map[[8]byte]int
	dupes   bool
	line    int
}

// OpenSource opens path and settles its format (detecting it from the first
// record when opts.Format is auto).
func OpenSource(path string, opts ImportOptions) (*Source, error) {
	f := opts.Format
	if f == "" {
		f = FormatAuto
	}
	s := &Source{path: path, format: f, dupes: opts.AllowDuplicates}
	if !s.dupes {
		s.seen = map[[8]byte]int{}
	}
	if f == FormatCSV || (f == FormatAuto && (strings.HasSuffix(path, ".csv") || strings.HasSuffix(path, ".csv.gz"))) {
		s.format = FormatCSV
		ad, err := genericAdapter(FormatCSV, "csv", opts.Mapping)
		if err != nil {
			return nil, err
		}
		s.ad = ad
		cs, err := openCSV(path, opts.Options)
		if err != nil {
			return nil, err
		}
		s.csv = cs
		return s, nil
	}
	raw, err := OpenRaw(path, opts.Options...)
	if err != nil {
		return nil, err
	}
	s.raw = raw
	if f == FormatAuto {
		first, err := raw.Next()
		if err != nil {
			raw.Close()
			return nil, err
		}
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(first, &rec); err != nil {
			raw.Close()
			return nil, fmt.Errorf("%s: %s %d: cannot detect format: malformed JSON: %v", path, raw.Unit(), raw.Line(), err)
		}
		if f, err = detect(rec); err != nil {
			raw.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		s.format = f
		s.pending = append(json.RawMessage(nil), first...)
		s.line = raw.Line()
	}
	switch s.format {
	case FormatCodeFeedback:
	case FormatNative:
		// Without a mapping native records decode as written (no fields).
		s.ad = &adapter{format: FormatNative}
		if len(opts.Mapping) > 0 {
			s.ad, err = genericAdapter(FormatNative, "", opts.Mapping)
		}
	default:
		base, ok := adapters[s.format]
		if !ok {
			raw.Close()
			return nil, fmt.Errorf("unknown format %q", s.format)
		}
		s.ad, err = base.withMapping(opts.Mapping)
	}
	if err != nil {
		raw.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) unit() string {
	if s.raw != nil {
		return s.raw.Unit()
	}
	return "line"
}

// Format is the input's format (detected or named).
func (s *Source) Format() Format { return s.format }

// Dialogues reports whether the source yields dialogues (else problems).
func (s *Source) Dialogues() bool { return s.format == FormatCodeFeedback }

// Next returns the next record; io.EOF at the end; *RecordError for a bad
// record (malformed JSON, invalid UTF-8, missing required fields, a
// duplicate id), after which Next may be called again; any other error is
// fatal.
func (s *Source) Next() (Record, error) {
	rec, fields, err := s.nextRaw()
	if err != nil {
		return Record{}, err
	}
	out, err := s.decode(rec, fields, s.line)
	if err != nil {
		return Record{}, err
	}
	return out, s.checkDup(out, rec, s.line)
}

// nextRaw reads the next record's bytes (valid until the next call), or its
// fields for CSV.
func (s *Source) nextRaw() (json.RawMessage, map[string]json.RawMessage, error) {
	switch {
	case s.csv != nil:
		row, line, err := s.csv.next()
		if err != nil {
			return nil, nil, err
		}
		s.line = line
		rec, _ := json.Marshal(row)
		return rec, row, nil
	case s.pending != nil:
		rec := s.pending
		s.pending = nil
		return rec, nil, nil
	}
	rec, err := s.raw.Next()
	if err != nil {
		return nil, nil, err
	}
	s.line = s.raw.Line()
	return rec, nil, nil
}

// decode maps one record through the adapter. It reads only settings of s,
// so records may be decoded concurrently.
func (s *Source) decode(rec json.RawMessage, fields map[string]json.RawMessage, line int) (Record, error) {
	errf := func(format string, args ...any) *RecordError {
		return &RecordError{File: s.path, Unit: s.unit(), Line: line, Reason: fmt.Sprintf(format, args...), Raw: rec}
	}
	var out Record
	if s.format == FormatCodeFeedback {
		d, err := decodeDialogue(rec)
		if err != nil {
			return Record{}, errf("%v", err)
		}
		if err := d.Validate(); err != nil {
			return Record{}, errf("%v", err)
		}
		out.Dialogue = &d
		return out, nil
	}
	nonFinite := false
	var p Problem
	// This tool's own Problem JSON without a mapping decodes as written:
	// one typed decode, and the field map only when that fails (for the
	// Python NaN repair and the same error messages).
	direct := s.format == FormatNative && len(s.ad.fields) == 0 && fields == nil && json.Unmarshal(rec, &p) == nil
	if !direct && fields == nil {
		if err := json.Unmarshal(rec, &fields); err != nil {
			fixed, changed := fixPythonNonFinite(rec)
			if !changed || json.Unmarshal(fixed, &fields) != nil {
				return Record{}, errf("malformed JSON: %v", err)
			}
			rec, nonFinite = fixed, true
		}
	}
	var err error
	switch {
	case direct:
	case s.format == FormatNative && len(s.ad.fields) == 0:
		// This tool's own Problem JSON: decode it as written.
		p = Problem{}
		err = json.Unmarshal(rec, &p)
	default:
		p, err = s.ad.toProblem(fields)
	}
	if err != nil {
		return Record{}, errf("%v", err)
	}
	if nonFinite {
		if p.Metadata == nil {
			p.Metadata = map[string]string{}
		}
		p.Metadata[MetaPythonNonFinite] = "true"
	}
	if err := p.Query.Validate(); err != nil {
		return Record{}, errf("%v", err)
	}
	out.Problem = &p
	return out, nil
}

// checkDup rejects a record whose id an earlier record had (records in
// file order).
func (s *Source) checkDup(out Record, rec json.RawMessage, line int) error {
	if s.seen == nil {
		return nil
	}
	h := sha256.Sum256([]byte(out.ID()))
	var k [8]byte
	copy(k[:], h[:8])
	if prev, dup := s.seen[k]; dup {
		return &RecordError{File: s.path, Unit: s.unit(), Line: line, Reason: fmt.Sprintf("duplicate id %q (first seen at %s %d)", out.ID(), s.unit(), prev), Raw: rec}
	}
	s.seen[k] = line
	return nil
}

// Close releases the file.
func (s *Source) Close() error {
	if s.csv != nil {
		return s.csv.close()
	}
	return s.raw.Close()
}

// decodeDialogueGeneric is decodeDialogue by way of a field map: decode to
// a map, re-encode the known fields and decode them again. decodeDialogue
// uses it only for records its single typed decode cannot take exactly as
// this does (errors, keys that differ from a field name only in case, keys
// given twice, escaped keys), so both always agree; the tests hold them to it.
func decodeDialogueGeneric(rec json.RawMessage) (Dialogue, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(rec, &fields); err != nil {
		return Dialogue{}, fmt.Errorf("malformed JSON: %v", err)
	}
	rawID := fields["id"]
	delete(fields, "id")
	var d Dialogue
	known, _ := json.Marshal(fields)
	if err := json.Unmarshal(known, &d); err != nil {
		return d, fmt.Errorf("malformed dialogue: %v", err)
	}
	if len(rawID) > 0 && !isNull(rawID) {
		id, err := scalarString(rawID)
		if err != nil {
			return d, fmt.Errorf("field \"id\": %v", err)
		}
		d.ID = id
		if rawID[0] != '"' && d.SourceID == nil {
			d.SourceID = append(json.RawMessage(nil), rawID...)
		}
	}
	for _, k := range dialogueFields {
		delete(fields, k)
	}
	if len(fields) > 0 {
		if d.Extra == nil {
			d.Extra = map[string]json.RawMessage{}
		}
		for k, v := range fields {
			d.Extra[k] = v
		}
	}
	return d, nil
}

var dialogueFields = []string{"id", "messages", "stage", "method", "model", "prompt_version", "sources", "labels", "source_id", "extra"}

// CodeFeedbackRecord is a dialogue exactly as a Code-Feedback record:
// {"id": <original id>, "messages": [{"role", "content"}]}. Execution turns
// become user turns ("Execution result: \n" + output), as in Code-Feedback.
type CodeFeedbackRecord struct {
	ID       json.RawMessage `json:"id"`
	Messages []ChatMessage   `json:"messages"`
}

// ChatMessage is a plain {role, content} turn.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ReadProblems streams the problems of a benchmark or query file. Yields
// RecordErrors for bad records (the range may continue) and stops after a
// fatal error or when ctx is done.
func ReadProblems(ctx context.Context, path string, opts ImportOptions) iter.Seq2[Problem, error] {
	return func(yield func(Problem, error) bool) {
		s, err := OpenSource(path, opts)
		if err != nil {
			yield(Problem{}, err)
			return
		}
		defer s.Close()
		if s.Dialogues() {
			yield(Problem{}, fmt.Errorf("%s: holds dialogues (format %s), not problems", path, s.format))
			return
		}
		for r, err := range each(ctx, s.Next) {
			var p Problem
			if r.Problem != nil {
				p = *r.Problem
			}
			if !yield(p, err) {
				return
			}
		}
	}
}

// LoadProblems reads a whole small benchmark file (HumanEval, MBPP, EvalPlus,
// LeetCode, or this tool's problem JSONL), detecting its format, and fails
// on the first bad record.
func LoadProblems(path string) ([]Problem, error) {
	var out []Problem
	for p, err := range ReadProblems(context.Background(), path, ImportOptions{}) {
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// csvSource reads a CSV file with a header row; each data row becomes a
// record of string fields.
type csvSource struct {
	f        *os.File
	closeDec func()
	r        *csv.Reader
	header   []string
	path     string
	row      int
}

func openCSV(path string, opts []Option) (*csvSource, error) {
	o := buildOptions(opts)
	f, dr, closeDec, err := openInput(path)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bufio.NewReaderSize(dr, 1<<16))
	r.FieldsPerRecord = 0
	header, err := r.Read()
	if err == io.EOF {
		closeDec()
		f.Close()
		if o.allowEmpty {
			return &csvSource{f: nil, r: nil, path: path}, nil
		}
		return nil, fmt.Errorf("%s: empty file (no header row)", path)
	}
	if err != nil {
		closeDec()
		f.Close()
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	return &csvSource{f: f, closeDec: closeDec, r: r, header: append([]string(nil), header...), path: path}, nil
}

func (c *csvSource) next() (map[string]json.RawMessage, int, error) {
	if c.r == nil {
		return nil, 0, io.EOF
	}
	rec, err := c.r.Read()
	c.row++
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return nil, 0, &RecordError{File: c.path, Unit: "line", Line: pe.Line, Reason: pe.Err.Error()}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: data row %d: %w", c.path, c.row, err)
	}
	// FieldPos is valid only after a successful Read.
	line, _ := c.r.FieldPos(0)
	out := make(map[string]json.RawMessage, len(rec))
	for i, v := range rec {
		if !utf8.ValidString(v) {
			return nil, 0, &RecordError{File: c.path, Unit: "line", Line: line, Reason: fmt.Sprintf("invalid UTF-8 in column %q", c.header[i])}
		}
		b, _ := json.Marshal(v)
		out[c.header[i]] = b
	}
	return out, line, nil
}

func (c *csvSource) close() error {
	if c.f == nil {
		return nil
	}
	c.closeDec()
	return c.f.Close()
}
