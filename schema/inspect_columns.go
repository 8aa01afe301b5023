package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unsafe"

	"github.com/parquet-go/parquet-go"
)

// A column reader for `inspect`: it decodes only the columns a dialogue is
// made of, page by page from their levels and values, instead of rebuilding
// each row through parquet-go's reflection (the largest cost of reading).
// Rows are then converted exactly as the row reader converts them
// (FromParquet, codeFeedbackDialogue), so reports are the same. Files whose
// columns it does not recognise are read by the row reader.

// openParquetColumnGroups is openParquetRowGroups with the column reader
// for each row group whose columns it can read.
func openParquetColumnGroups(path string, opts ...Option) (*os.File, []*parquetRowGroup, error) {
	f, pf, err := openParquetFile(path, buildOptions(opts))
	if err != nil {
		return nil, nil, err
	}
	layout := parquetLayout(pf.Schema())
	plan, ok := planColumns(pf.Schema(), layout)
	var rgs []*parquetRowGroup
	var first int
	for _, rg := range pf.RowGroups() {
		var rows rowSource
		if ok {
			rows = newColumnRows(path, layout, plan, rg)
		} else {
			rows = rowsOf(path, layout, rg)
		}
		rgs = append(rgs, &parquetReader{path: path, rows: rows, row: first})
		first += int(rg.NumRows())
	}
	return f, rgs, nil
}

// leafPlan locates one leaf column: its index and levels. listDef is the
// definition level at which an element of the enclosing list exists.
type leafPlan struct {
	index   int
	maxDef  byte
	listDef byte
	kind    parquet.Kind
}

// columnPlan holds the leaves a layout needs; flat names the optional
// string columns of the native layout, in ParquetDialogue's order.
type columnPlan struct {
	id, role, content leafPlan
	flat              []leafPlan
}

var nativeFlatColumns = []string{"stage", "method", "model", "prompt_version", "sources", "labels", "message_meta", "source_id", "extra"}

// planColumns finds the columns of layout in s; false when a column is
// missing or of a shape the column reader does not handle.
func planColumns(s *parquet.Schema, layout ExportFormat) (columnPlan, bool) {
	var p columnPlan
	var ok bool
	idKind := parquet.ByteArray
	if layout == "int" {
		idKind = parquet.Int64
	}
	if p.id, ok = planLeaf(s, idKind, 0, "id"); !ok {
		return p, false
	}
	if p.role, ok = planLeaf(s, parquet.ByteArray, 1, "messages", "list", "element", "role"); !ok {
		return p, false
	}
	if p.content, ok = planLeaf(s, parquet.ByteArray, 1, "messages", "list", "element", "content"); !ok {
		return p, false
	}
	if layout == ExportNative {
		for _, name := range nativeFlatColumns {
			lp, ok := planLeaf(s, parquet.ByteArray, 0, name)
			if !ok {
				if _, present := s.Lookup(name); present || lookupPrefixOK(s, name) {
					return p, false
				}
				lp.index = -1 // absent: always empty, as the row reader leaves it
			}
			p.flat = append(p.flat, lp)
		}
	}
	return p, true
}

func lookupPrefixOK(s *parquet.Schema, col string) bool { _, ok := lookupPrefix(s, col); return ok }

// planLeaf finds the leaf at path with the given physical kind and
// repetition depth.
func planLeaf(s *parquet.Schema, kind parquet.Kind, maxRep int, path ...string) (leafPlan, bool) {
	leaf, ok := s.Lookup(path...)
	if !ok || leaf.Node.Type().Kind() != kind || leaf.MaxRepetitionLevel != maxRep || leaf.MaxDefinitionLevel > 255 {
		return leafPlan{}, false
	}
	lp := leafPlan{index: leaf.ColumnIndex, maxDef: byte(leaf.MaxDefinitionLevel), kind: kind}
	var node parquet.Node = s
	def := 0
	for _, name := range path {
		var next parquet.Node
		for _, f := range node.Fields() {
			if f.Name() == name {
				next = f
			}
		}
		if next == nil {
			return leafPlan{}, false
		}
		node = next
		if node.Optional() || node.Repeated() {
			def++
		}
		if node.Repeated() {
			lp.listDef = byte(def)
		}
	}
	return lp, true
}

// columnRows reads one row group's rows from its columns.
type columnRows struct {
	path              string
	layout            ExportFormat
	numRows           int64
	id, role, content *colStream
	flat              []*colStream
	roles, contents   []string
}

func newColumnRows(path string, layout ExportFormat, p columnPlan, rg parquet.RowGroup) *columnRows {
	chunks := rg.ColumnChunks()
	open := func(lp leafPlan) *colStream {
		if lp.index < 0 {
			return nil
		}
		return &colStream{pages: chunks[lp.index].Pages(), leafPlan: lp}
	}
	c := &columnRows{path: path, layout: layout, numRows: rg.NumRows(), id: open(p.id), role: open(p.role), content: open(p.content)}
	c.role.intern = true
	for _, lp := range p.flat {
		c.flat = append(c.flat, open(lp))
	}
	return c
}

func (c *columnRows) next() (Dialogue, func() []byte, error) {
	var id string
	var intID int64
	var err error
	if c.layout == "int" {
		intID, _, err = c.id.nextInt64()
	} else {
		id, _, err = c.id.nextString()
	}
	if err != nil {
		return Dialogue{}, nil, err // io.EOF at the end of the row group
	}
	if c.roles, err = c.role.nextList(c.roles[:0]); err != nil {
		return Dialogue{}, nil, fmt.Errorf("column role: %w", noEOF(err))
	}
	if c.contents, err = c.content.nextList(c.contents[:0]); err != nil {
		return Dialogue{}, nil, fmt.Errorf("column content: %w", noEOF(err))
	}
	if len(c.roles) != len(c.contents) {
		return Dialogue{}, nil, fmt.Errorf("%d roles for %d contents", len(c.roles), len(c.contents))
	}
	var msgs []ParquetMessage
	if len(c.roles) > 0 {
		msgs = make([]ParquetMessage, len(c.roles))
		for i := range msgs {
			msgs[i] = ParquetMessage{Role: c.roles[i], Content: c.contents[i]}
		}
	}
	switch c.layout {
	case ExportNative:
		row := ParquetDialogue{ID: id, Messages: msgs}
		if err := c.readFlat(&row); err != nil {
			return Dialogue{}, nil, err
		}
		d, err := FromParquet(&row)
		return d, func() []byte { b, _ := json.Marshal(row); return b }, err
	case "int":
		row := CodeFeedbackIntRow{ID: intID, Messages: msgs}
		s := strconv.FormatInt(intID, 10)
		return codeFeedbackDialogue(s, json.RawMessage(s), msgs), func() []byte { b, _ := json.Marshal(row); return b }, nil
	}
	row := CodeFeedbackRow{ID: id, Messages: msgs}
	return codeFeedbackDialogue(id, nil, msgs), func() []byte { b, _ := json.Marshal(row); return b }, nil
}

func noEOF(err error) error {
	if err == io.EOF {
		return errors.New("fewer values than rows")
	}
	return err
}

func (c *columnRows) close() error {
	var errs []error
	for _, s := range append([]*colStream{c.id, c.role, c.content}, c.flat...) {
		if s != nil {
			s.release()
			errs = append(errs, s.pages.Close())
		}
	}
	return errors.Join(errs...)
}

// colStream walks the levels and values of one column chunk across its
// pages (a row may span pages in files written with data page v1).
type colStream struct {
	leafPlan
	pages parquet.Pages
	page  parquet.Page // held until the next page is read
	reps  []byte
	defs  []byte
	n, li int // levels in the page, next level
	vi    int // next value
	// values: byte arrays (data, offs), or int64s; through idx when the
	// page is dictionary-encoded
	data []byte
	offs []uint32
	i64  []int64
	idx  []int32
	dict bool
	// intern: keep one string per distinct value of a column of few
	// values (roles), sparing an allocation per message; the first few
	// are kept, looked up by a scan (cheaper than a map for so few).
	intern   bool
	interned []string
	// views: nextList and nextString return strings that point into the
	// page buffer (valid until the next page is read) instead of copies.
	views bool
}

// release hands the current page's buffers back to parquet-go's pools, for
// the next page to reuse.
func (s *colStream) release() {
	if s.page != nil {
		parquet.Release(s.page)
		s.page = nil
	}
}

// load reads the next page once the current one is used up.
func (s *colStream) load() error {
	for s.li == s.n {
		s.release()
		p, err := s.pages.ReadPage()
		if err != nil {
			return err // io.EOF after the last page
		}
		s.page = p
		s.n, s.li, s.vi = int(p.NumValues()), 0, 0
		s.reps, s.defs = p.RepetitionLevels(), p.DefinitionLevels()
		if s.maxDef > 0 && len(s.defs) < s.n || s.listDef > 0 && len(s.reps) < s.n {
			return fmt.Errorf("page of %d values has %d definition and %d repetition levels", s.n, len(s.defs), len(s.reps))
		}
		vals := p.Data()
		s.dict = p.Dictionary() != nil
		if s.dict {
			s.idx = vals.Int32()
			vals = p.Dictionary().Page().Data()
		}
		if s.kind == parquet.Int64 {
			s.i64 = vals.Int64()
		} else {
			s.data, s.offs = vals.ByteArray()
		}
	}
	return nil
}

func (s *colStream) def() byte {
	if s.maxDef == 0 {
		return 0
	}
	return s.defs[s.li]
}

// value returns the index of the next value, checked against the page.
func (s *colStream) value() (int, error) {
	k := s.vi
	s.vi++
	if s.dict {
		if k >= len(s.idx) {
			return 0, errors.New("more levels than values")
		}
		k = int(s.idx[k])
	}
	n := len(s.i64)
	if s.kind != parquet.Int64 {
		n = len(s.offs) - 1
	}
	if k < 0 || k >= n {
		return 0, fmt.Errorf("value %d of %d", k, n)
	}
	return k, nil
}

func (s *colStream) bytesAt(k int) ([]byte, error) {
	lo, hi := s.offs[k], s.offs[k+1]
	if lo > hi || int(hi) > len(s.data) {
		return nil, errors.New("corrupt byte array offsets")
	}
	return s.data[lo:hi], nil
}

func (s *colStream) str(b []byte) string {
	if s.views {
		if len(b) == 0 {
			return ""
		}
		return unsafe.String(&b[0], len(b))
	}
	if !s.intern {
		return string(b)
	}
	for _, v := range s.interned {
		if v == string(b) { // no allocation for the comparison
			return v
		}
	}
	v := string(b)
	if len(s.interned) < 8 {
		s.interned = append(s.interned, v)
	}
	return v
}

// nextString reads the next value of a flat column; "" when null.
func (s *colStream) nextString() (string, bool, error) {
	if err := s.load(); err != nil {
		return "", false, err
	}
	present := s.def() == s.maxDef
	s.li++
	if !present {
		return "", false, nil
	}
	k, err := s.value()
	if err != nil {
		return "", false, err
	}
	b, err := s.bytesAt(k)
	if s.views {
		return s.str(b), true, err
	}
	return string(b), true, err
}

func (s *colStream) nextInt64() (int64, bool, error) {
	if err := s.load(); err != nil {
		return 0, false, err
	}
	present := s.def() == s.maxDef
	s.li++
	if !present {
		return 0, false, nil
	}
	k, err := s.value()
	if err != nil {
		return 0, false, err
	}
	return s.i64[k], true, nil
}

// nextList appends the next row's list elements ("" for a null element)
// to dst.
func (s *colStream) nextList(dst []string) ([]string, error) {
	if err := s.load(); err != nil {
		return dst, err
	}
	if s.reps[s.li] != 0 {
		return dst, errors.New("row does not start at repetition level 0")
	}
	start := len(dst)
	for {
		d := s.def()
		s.li++
		if d < s.listDef { // a null or empty list: no elements
			return dst, nil
		}
		v := ""
		if d == s.maxDef {
			k, err := s.value()
			if err != nil {
				return dst, err
			}
			b, err := s.bytesAt(k)
			if err != nil {
				return dst, err
			}
			v = s.str(b)
		}
		dst = append(dst, v)
		if s.views && s.li == s.n {
			// The row may go on in the next page, and reading it
			// releases this one: its values so far become copies.
			for i := start; i < len(dst); i++ {
				dst[i] = strings.Clone(dst[i])
			}
		}
		if err := s.load(); err == io.EOF {
			return dst, nil
		} else if err != nil {
			return dst, err
		}
		if s.reps[s.li] == 0 {
			return dst, nil
		}
	}
}

// scan counts the row group into rep without keeping its rows: values are
// views of the page buffers (counted, hashed, or copied where kept, never
// held past their page), roles are interned, and a Code-Feedback row's id
// is read only while rep still takes samples. It counts what Read and then
// addDialogue count, bad records included.
func (c *columnRows) scan(ctx context.Context, rep *Report, firstRow int, sample int) error {
	native := c.layout == ExportNative
	for _, s := range append([]*colStream{c.id, c.content}, c.flat...) {
		if s != nil {
			s.views = true
		}
	}
	var msgs []Message
	var pmsgs []ParquetMessage
	var row ParquetDialogue
	for k := int64(0); k < c.numRows; k++ {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		line := firstRow + int(k) + 1
		// Any id will do for Validate unless a sample shows it: a
		// Code-Feedback row's id is never empty (its messages' hash when
		// the column is).
		id := "-"
		if native || len(rep.Samples) < sample {
			var err error
			if id, err = c.readID(); err != nil {
				return fmt.Errorf("%s: row %d: column id: %w", c.path, line, noEOF(err))
			}
		}
		var err error
		if c.roles, err = c.role.nextList(c.roles[:0]); err != nil {
			return fmt.Errorf("%s: row %d: column role: %w", c.path, line, noEOF(err))
		}
		if c.contents, err = c.content.nextList(c.contents[:0]); err != nil {
			return fmt.Errorf("%s: row %d: column content: %w", c.path, line, noEOF(err))
		}
		if len(c.roles) != len(c.contents) {
			return fmt.Errorf("%s: row %d: %d roles for %d contents", c.path, line, len(c.roles), len(c.contents))
		}
		var d Dialogue
		if native {
			pmsgs = pmsgs[:0]
			for i := range c.roles {
				pmsgs = append(pmsgs, ParquetMessage{Role: c.roles[i], Content: c.contents[i]})
			}
			row = ParquetDialogue{ID: id, Messages: pmsgs}
			if err := c.readFlat(&row); err != nil {
				return fmt.Errorf("%s: row %d: %w", c.path, line, err)
			}
			d, err = FromParquet(&row)
		} else {
			msgs = msgs[:0]
			for i := range c.roles {
				msgs = append(msgs, Message{Role: c.roles[i], Content: c.contents[i]})
			}
			d = Dialogue{ID: id, Messages: msgs}
			if strings.TrimSpace(id) == "" {
				d.ID = DialogueID(msgs)
			}
		}
		if err == nil {
			err = d.Validate()
		}
		if err != nil {
			// Raw is left out: inspect prints the reason only.
			if err := rep.bad(&RecordError{File: c.path, Unit: "row", Line: line, Reason: err.Error()}); err != nil {
				return err
			}
			continue
		}
		rep.Diversity.Add(&d)
		rep.addDialogueStats(&d, sample)
	}
	return nil
}

// readFlat reads the native layout's flat columns of the next row into row.
func (c *columnRows) readFlat(row *ParquetDialogue) error {
	dst := []*string{&row.Stage, &row.Method, &row.Model, &row.PromptVersion, &row.Sources, &row.Labels, &row.MessageMeta, &row.SourceID, &row.Extra}
	for i, s := range c.flat {
		if s == nil {
			continue
		}
		var err error
		if *dst[i], _, err = s.nextString(); err != nil {
			return fmt.Errorf("column %s: %w", nativeFlatColumns[i], noEOF(err))
		}
	}
	return nil
}

// readID reads the next id as the row reader renders it.
func (c *columnRows) readID() (string, error) {
	if c.layout == "int" {
		n, _, err := c.id.nextInt64()
		return strconv.FormatInt(n, 10), err
	}
	s, _, err := c.id.nextString()
	return s, err
}
