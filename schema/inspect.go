package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/parquet-go/parquet-go"

	"github.com/codefeedback/codefeedback/internal/tally"
)

// Report summarises a records file for `codefeedback inspect`.
type Report struct {
	File     string
	Kind     string // "dialogues", "problems", "ratings", "sharegpt"
	Format   string
	Records  int
	Bad      []string // first bad-record messages (RecordErrors)
	BadCount int
	Schema   string                    // Parquet schema, or JSON fields with types and presence
	fields   map[string]map[string]int // field -> JSON type -> count
	langKeys map[string]string         // fence language -> its key in Langs
	Turns    Dist                      // per dialogue
	MsgLen   Dist                      // per message, characters
	TextLen  Dist                      // per dialogue total, or per problem text
	Roles    map[string]int            // complete once Inspect returns (see roleTally)
	Langs    map[string]int
	Scores   map[string]map[int]int // rating score histogram per rubric (0 = unrated)
	Samples  []string               // rendered samples
	// Diversity of the dialogues: distinct first and closing turns,
	// template share, repeated openings.
	Diversity Diversity
	// roleTally counts the first few roles before they reach Roles: a
	// scan of a few interned strings per message instead of a map
	// update. foldRoles moves them into Roles.
	roleTally []roleCount
}

type roleCount struct {
	role string
	n    int
}

func (rep *Report) countRole(role string) {
	for i := range rep.roleTally {
		if rep.roleTally[i].role == role {
			rep.roleTally[i].n++
			return
		}
	}
	if len(rep.roleTally) < 8 {
		rep.roleTally = append(rep.roleTally, roleCount{strings.Clone(role), 1})
		return
	}
	rep.Roles[role]++
}

// foldRoles adds the tallied roles to Roles.
func (rep *Report) foldRoles() {
	for _, rc := range rep.roleTally {
		rep.Roles[rc.role] += rc.n
	}
	rep.roleTally = rep.roleTally[:0]
}

// Inspect reads path as a stream and summarises it; sample records are
// rendered for reading in a terminal. Sizes are counted per distinct value
// (exact percentiles in memory that does not grow with the records); the
// records themselves are not kept. It stops with ctx's error once ctx is
// done.
func Inspect(ctx context.Context, path string, sample int) (*Report, error) {
	rep := newReport(path)
	bad := rep.bad
	if IsParquet(path) {
		rep.Kind, rep.Format = "dialogues", "parquet"
		if s, err := parquetSchema(path); err == nil {
			rep.Schema = s
		}
		f, rgs, err := openParquetColumnGroups(path, AllowEmpty())
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := rep.inspectRowGroups(ctx, rgs, sample); err != nil {
			return nil, err
		}
		rep.foldRoles()
		return rep, nil
	}
	raw, err := OpenRaw(path)
	if err != nil {
		return nil, err
	}
	defer raw.Close()
	rep.Format = "jsonl"
	if raw.array {
		rep.Format = "json array"
	}
	for n := 0; ; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		rec, err := raw.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if err := bad(err); err != nil {
				return nil, err
			}
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(rec, &m); err != nil {
			if fixed, ok := fixPythonNonFinite(rec); !ok || json.Unmarshal(fixed, &m) != nil {
				bad(raw.Errorf("malformed JSON: %v", err))
				continue
			}
		}
		rep.addFields(m)
		if rep.Kind == "" {
			rep.Kind = kindOf(m)
		}
		switch rep.Kind {
		case "dialogues":
			d, err := decodeDialogue(rec)
			if err != nil {
				bad(raw.Errorf("%v", err))
				continue
			}
			rep.addDialogue(&d, sample)
		case "sharegpt":
			var s ShareGPTRecord
			if err := json.Unmarshal(rec, &s); err != nil {
				bad(raw.Errorf("%v", err))
				continue
			}
			d := Dialogue{ID: s.ID}
			for _, t := range s.Conversations {
				d.Messages = append(d.Messages, Message{Role: t.From, Content: t.Value})
			}
			rep.addDialogue(&d, sample)
		case "ratings":
			var rt Rating
			if err := json.Unmarshal(rec, &rt); err != nil {
				bad(raw.Errorf("%v", err))
				continue
			}
			rep.Records++
			if rep.Scores[rt.Rubric] == nil {
				rep.Scores[rt.Rubric] = map[int]int{}
			}
			rep.Scores[rt.Rubric][rt.Score]++
			if len(rep.Samples) < sample {
				rep.Samples = append(rep.Samples, fmt.Sprintf("%s  rubric=%s score=%d  %s", rt.QueryID, rt.Rubric, rt.Score, oneLine(rt.Reason, 100)))
			}
		default:
			rep.addProblem(m, sample)
		}
	}
	rep.Schema = rep.fieldSchema()
	rep.foldRoles()
	return rep, nil
}

// inspectRowGroups counts the row groups of a Parquet file, as many at a
// time as there are cores, each into a report of its own, and adds each to
// rep in file order as soon as the ones before it are in (samples and bad
// records as a sequential read would list them). A row group's slot is
// freed only once it is added, so at most that many reports exist at once.
func (rep *Report) inspectRowGroups(ctx context.Context, rgs []*parquetRowGroup, sample int) error {
	type result struct {
		part *Report
		err  error
	}
	results := make([]chan result, len(rgs))
	for i := range results {
		results[i] = make(chan result, 1)
	}
	slots := make(chan struct{}, runtime.GOMAXPROCS(0))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i, rg := range rgs {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				// The first row group counts straight into rep (nothing
				// else touches rep before its result is in): a file of
				// one row group is not counted twice, once to merge.
				part := rep
				if i > 0 {
					part = newReport(rep.File)
				}
				err := errors.Join(part.readRowGroup(ctx, rg, sample), rg.Close())
				results[i] <- result{part, err}
			}()
		}
	}()
	for i := range rgs {
		res := <-results[i]
		if res.err != nil {
			return res.err
		}
		if i > 0 {
			rep.merge(res.part, sample)
		}
		<-slots
	}
	return nil
}

func newReport(path string) *Report {
	return &Report{File: path, Roles: map[string]int{}, Langs: map[string]int{}, Scores: map[string]map[int]int{}, fields: map[string]map[string]int{}}
}

// readRowGroup counts one row group: by the column scan when the column
// reader reads it; else rows are decoded on one goroutine, counted on
// another and their diversity on a third, a few batches in flight bounding
// the memory.
func (rep *Report) readRowGroup(ctx context.Context, r *parquetReader, sample int) error {
	if c, ok := r.rows.(*columnRows); ok {
		return c.scan(ctx, rep, r.row, sample)
	}
	type batch struct {
		ds   []Dialogue
		errs []error
	}
	ch := make(chan batch, 4)
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }() // before the caller closes r
	go func() {
		defer close(done)
		defer close(ch)
		for {
			var b batch
			for len(b.ds) < 256 {
				d, err := r.Read()
				if err == io.EOF {
					break
				}
				b.ds, b.errs = append(b.ds, d), append(b.errs, err)
				var re *RecordError
				if err != nil && !errors.As(err, &re) {
					break
				}
			}
			if len(b.ds) == 0 {
				return
			}
			select {
			case ch <- b:
			case <-stop:
				return
			}
		}
	}()
	divCh, divDone := make(chan batch, 4), make(chan struct{})
	go func() {
		defer close(divDone)
		for b := range divCh {
			for i := range b.ds {
				if b.errs[i] == nil {
					rep.Diversity.Add(&b.ds[i])
				}
			}
		}
	}()
	defer func() { close(divCh); <-divDone }()
	for b := range ch {
		if err := ctx.Err(); err != nil {
			return err
		}
		divCh <- b
		for i := range b.ds {
			if err := b.errs[i]; err != nil {
				if err := rep.bad(err); err != nil {
					return err
				}
				continue
			}
			rep.addDialogueStats(&b.ds[i], sample)
		}
	}
	return nil
}

// bad counts a bad record (a RecordError) or returns any other error.
func (rep *Report) bad(err error) error {
	var re *RecordError
	if errors.As(err, &re) {
		rep.BadCount++
		if len(rep.Bad) < 5 {
			rep.Bad = append(rep.Bad, re.Error())
		}
		return nil
	}
	return err
}

// merge adds the dialogue figures of p, which read the records after rep's.
func (rep *Report) merge(p *Report, sample int) {
	rep.Records += p.Records
	rep.BadCount += p.BadCount
	for _, b := range p.Bad {
		if len(rep.Bad) < 5 {
			rep.Bad = append(rep.Bad, b)
		}
	}
	rep.Turns.Merge(&p.Turns)
	rep.MsgLen.Merge(&p.MsgLen)
	rep.TextLen.Merge(&p.TextLen)
	p.foldRoles()
	for k, n := range p.Roles {
		rep.Roles[k] += n
	}
	for k, n := range p.Langs {
		rep.Langs[k] += n
	}
	for _, s := range p.Samples {
		if len(rep.Samples) < sample {
			rep.Samples = append(rep.Samples, s)
		}
	}
	rep.Diversity.Merge(&p.Diversity)
}

func kindOf(m map[string]json.RawMessage) string {
	switch {
	case m["messages"] != nil:
		return "dialogues"
	case m["conversations"] != nil:
		return "sharegpt"
	case m["rubric"] != nil && m["score"] != nil:
		return "ratings"
	}
	return "problems"
}

func (rep *Report) addFields(m map[string]json.RawMessage) {
	for k, v := range m {
		t := "null"
		if len(v) > 0 {
			switch v[0] {
			case '"':
				t = "string"
			case '{':
				t = "object"
			case '[':
				t = "array"
			case 't', 'f':
				t = "bool"
			case 'n':
				t = "null"
			default:
				t = "number"
			}
		}
		if rep.fields[k] == nil {
			rep.fields[k] = map[string]int{}
		}
		rep.fields[k][t]++
	}
}

func (rep *Report) fieldSchema() string {
	keys := make([]string, 0, len(rep.fields))
	for k := range rep.fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		var ts []string
		for t, n := range rep.fields[k] {
			ts = append(ts, fmt.Sprintf("%s×%d", t, n))
		}
		sort.Strings(ts)
		fmt.Fprintf(&b, "  %-22s %s\n", k, strings.Join(ts, " "))
	}
	return b.String()
}

func (rep *Report) addDialogue(d *Dialogue, sample int) {
	rep.Diversity.Add(d)
	rep.addDialogueStats(d, sample)
}

// addDialogueStats counts d in everything but Diversity.
func (rep *Report) addDialogueStats(d *Dialogue, sample int) {
	rep.Records++
	rep.Turns.Add(len(d.Messages))
	total := 0
	for _, m := range d.Messages {
		rep.countRole(m.Role)
		rep.MsgLen.Add(len(m.Content))
		total += len(m.Content)
		FenceLanguages(m.Content, rep.countLang)
	}
	rep.TextLen.Add(total)
	if len(rep.Samples) < sample {
		var b strings.Builder
		fmt.Fprintf(&b, "── %s (%d turns)\n", d.ID, len(d.Messages))
		for _, m := range d.Messages {
			fmt.Fprintf(&b, "  [%s] %s\n", m.Role, oneLine(m.Content, 160))
		}
		rep.Samples = append(rep.Samples, b.String())
	}
}

// countLang counts a fence's language in lower case. lang may point into
// a page buffer: the map keys are copies, made once per spelling.
func (rep *Report) countLang(lang string) {
	k, ok := rep.langKeys[lang]
	if !ok {
		k = strings.ToLower(strings.Clone(lang))
		if rep.langKeys == nil {
			rep.langKeys = map[string]string{}
		}
		if len(rep.langKeys) < 256 {
			rep.langKeys[strings.Clone(lang)] = k
		}
	}
	rep.Langs[k]++
}

func (rep *Report) addProblem(m map[string]json.RawMessage, sample int) {
	rep.Records++
	text := ""
	for _, k := range []string{"text", "prompt", "instruction", "query", "question"} {
		if json.Unmarshal(m[k], &text) == nil && text != "" {
			break
		}
	}
	rep.TextLen.Add(len(text))
	var lang string
	if json.Unmarshal(m["language"], &lang) == nil && lang != "" {
		rep.Langs[lang]++
	}
	if len(rep.Samples) < sample {
		var id string
		for _, k := range []string{"id", "task_id"} {
			if s, err := scalarString(m[k]); err == nil && s != "" {
				id = s
				break
			}
		}
		rep.Samples = append(rep.Samples, fmt.Sprintf("── %s\n  %s\n", id, oneLine(text, 300)))
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func parquetSchema(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return "", err
	}
	return pf.Schema().String(), nil
}

// Dist is a distribution of non-negative integers kept as a count per
// distinct value: exact percentiles in memory that grows with the distinct
// values (message lengths: thousands), not with the records (millions).
// Values below denseMax are counted in a slice indexed by value (an add is
// an increment, not a map assignment), larger ones in a map.
type Dist struct {
	N      int64
	sum    int64
	dense  []int64
	counts map[int]int64
}

const denseMax = 1 << 16

// Add counts one value.
func (d *Dist) Add(v int) {
	d.N++
	d.sum += int64(v)
	if uint(v) < uint(len(d.dense)) {
		d.dense[v]++
		return
	}
	d.addSlow(v, 1)
}

func (d *Dist) addSlow(v int, n int64) {
	if v >= 0 && v < denseMax {
		if v >= len(d.dense) {
			d.dense = slices.Grow(d.dense, min(denseMax, max(64, 2*(v+1)))-len(d.dense))
			d.dense = d.dense[:cap(d.dense)]
		}
		d.dense[v] += n
		return
	}
	if d.counts == nil {
		d.counts = map[int]int64{}
	}
	d.counts[v] += n
}

// Merge adds o's values.
func (d *Dist) Merge(o *Dist) {
	if o.N == 0 {
		return
	}
	for v, n := range o.dense {
		if n > 0 {
			if v < len(d.dense) {
				d.dense[v] += n
			} else {
				d.addSlow(v, n)
			}
		}
	}
	for v, n := range o.counts {
		d.addSlow(v, n)
	}
	d.N += o.N
	d.sum += o.sum
}

// String summarises the values as min / p50 / p90 / p99 / max / mean; the
// percentile q is the value at index q*(N-1) of the sorted values.
func (d *Dist) String() string {
	if d.N == 0 {
		return "-"
	}
	type vc struct {
		v int
		n int64
	}
	var vals []vc
	for v, n := range d.dense {
		if n > 0 {
			vals = append(vals, vc{v, n})
		}
	}
	for v, n := range d.counts {
		vals = append(vals, vc{v, n})
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i].v < vals[j].v })
	p := func(q float64) int {
		idx := int64(q * float64(d.N-1))
		var seen int64
		for _, x := range vals {
			seen += x.n
			if seen > idx {
				return x.v
			}
		}
		return vals[len(vals)-1].v
	}
	return fmt.Sprintf("min %d  p50 %d  p90 %d  p99 %d  max %d  mean %.1f", vals[0].v, p(0.5), p(0.9), p(0.99), vals[len(vals)-1].v, float64(d.sum)/float64(d.N))
}

func counts(m map[string]int) string {
	return tally.Join(m, "%s %d", "-")
}

// Render writes the report for a terminal.
func (rep *Report) Render(w io.Writer) {
	rep.foldRoles()
	fmt.Fprintf(w, "file:     %s\nformat:   %s\nkind:     %s\nrecords:  %d\n", rep.File, rep.Format, rep.Kind, rep.Records)
	if rep.BadCount > 0 {
		fmt.Fprintf(w, "bad records: %d\n", rep.BadCount)
		for _, b := range rep.Bad {
			fmt.Fprintf(w, "  %s\n", b)
		}
	}
	fmt.Fprintf(w, "schema:\n%s", rep.Schema)
	if !strings.HasSuffix(rep.Schema, "\n") {
		fmt.Fprintln(w)
	}
	if rep.Turns.N > 0 {
		fmt.Fprintf(w, "turns per dialogue:   %s\n", rep.Turns.String())
		fmt.Fprintf(w, "chars per message:    %s\n", rep.MsgLen.String())
		fmt.Fprintf(w, "chars per dialogue:   %s\n", rep.TextLen.String())
		fmt.Fprintf(w, "roles:                %s\n", counts(rep.Roles))
		dv := rep.Diversity.Summary(5)
		approx := ""
		if dv.Estimated {
			approx = "≈" // a sketch's estimate past a million distinct texts
		}
		fmt.Fprintf(w, "distinct first user turns:  %s%d of %d dialogues\n", approx, dv.DistinctFirstUser, dv.Dialogues)
		fmt.Fprintf(w, "distinct closing turns:     %s%d of %d dialogues\n", approx, dv.DistinctClosings, dv.Dialogues)
		fmt.Fprintf(w, "distinct code-less replies: %s%d of %d assistant turns without code\n", approx, dv.DistinctCodeless, dv.CodelessTurns)
		fmt.Fprintf(w, "template share:             %.0f%% of dialogues made without a model\n", 100*dv.TemplateShare)
		if len(dv.TopOpenings) > 0 {
			fmt.Fprintln(w, "most repeated openings of assistant turns:")
			for _, o := range dv.TopOpenings {
				fmt.Fprintf(w, "  %6d  %s\n", o.Count, o.Text)
			}
		}
	} else if rep.TextLen.N > 0 {
		fmt.Fprintf(w, "chars per text:       %s\n", rep.TextLen.String())
	}
	fmt.Fprintf(w, "languages:            %s\n", counts(rep.Langs))
	rubrics := make([]string, 0, len(rep.Scores))
	for r := range rep.Scores {
		rubrics = append(rubrics, r)
	}
	sort.Strings(rubrics)
	for _, r := range rubrics {
		hist, total := rep.Scores[r], 0
		for _, n := range hist {
			total += n
		}
		fmt.Fprintf(w, "rating scores, rubric %s (0 = unrated):\n", r)
		for k := 0; k <= 5; k++ {
			if hist[k] == 0 && k == 0 {
				continue
			}
			bar := strings.Repeat("█", min(60, hist[k]*60/max(1, total)))
			fmt.Fprintf(w, "  %d %6d %s\n", k, hist[k], bar)
		}
	}
	if len(rep.Samples) > 0 {
		fmt.Fprintln(w, "sample:")
		for _, s := range rep.Samples {
			fmt.Fprint(w, s)
			if !strings.HasSuffix(s, "\n") {
				fmt.Fprintln(w)
			}
		}
	}
}
