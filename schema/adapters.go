package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Format names an input format an adapter understands.
type Format string

// Input formats. FormatAuto detects the format from the fields of the first
// record (or the .csv extension).
const (
	FormatAuto         Format = "auto"
	FormatAlpaca       Format = "alpaca"         // instruction(+input) + output/response: Code Alpaca, Evol-Instruct, Magicoder
	FormatMBPP         Format = "mbpp"           // text/code/test_list/... (mbpp.jsonl)
	FormatMBPPSanitize Format = "mbpp-sanitized" // prompt/code/test_imports/test_list (sanitized-mbpp.json)
	FormatHumanEval    Format = "humaneval"      // prompt/canonical_solution/test/entry_point
	FormatEvalPlus     Format = "evalplus"       // HumanEval+/MBPP+: HumanEval fields plus base_input/plus_input/atol
	FormatLeetCode     Format = "leetcode"       // LeetCodeDataset: prompt/completion/entry_point/test/query
	FormatCodeFeedback Format = "codefeedback"   // {"id","messages":[{role,content}]}, also this tool's own dialogues
	FormatNative       Format = "native"         // this tool's own Query/Problem JSONL
	FormatCSV          Format = "csv"            // header row; columns named like schema fields or mapped by --map
)

// Formats lists the formats a user can name.
var Formats = []Format{FormatAuto, FormatAlpaca, FormatMBPP, FormatMBPPSanitize, FormatHumanEval, FormatEvalPlus, FormatLeetCode, FormatCodeFeedback, FormatNative, FormatCSV}

// Targets a field mapping may name: the Problem fields a source field can fill.
const (
	TargetID         = "id"
	TargetText       = "text"
	TargetSolution   = "solution"
	TargetTests      = "tests"
	TargetTestImport = "test_import"
	TargetSetup      = "setup"
	TargetEntryPoint = "entry_point"
	TargetPrompt     = "prompt"
	TargetLanguage   = "language"
)

var targets = []string{TargetID, TargetText, TargetSolution, TargetTests, TargetTestImport, TargetSetup, TargetEntryPoint, TargetPrompt, TargetLanguage}

// Metadata keys the adapters set: the format a problem was imported from and
// the source fields that filled schema fields (so SourceRecord can render
// exactly those back).
const (
	metaFormat = "format"
	metaMapped = "mapped_fields"
	// MetaPythonNonFinite marks a record whose Python-JSON NaN/Infinity
	// tokens were imported as the strings "NaN", "Infinity", "-Infinity"
	// (standard JSON has no such numbers); SourceRecord renders them as strings.
	MetaPythonNonFinite = "python_nonfinite"
)

// fieldMap moves one source field into one Problem field. A field whose
// source is a single string but whose target is Tests is kind "string".
type fieldMap struct {
	src, dst string
	asList   bool // Tests source is a JSON list of strings (else one string)
}

// adapter turns a flat source record into a Problem. Source fields not
// mapped go verbatim into Problem.Extra; a mapped field whose value cannot be
// rendered back to the exact original JSON is also kept there, so every
// import is reversible by SourceRecord.
type adapter struct {
	format   Format
	source   string // Query.Source
	language string
	idPrefix string
	fields   []fieldMap
	// post adjusts the problem after mapping (composite text, metadata);
	// pre undoes it before rendering back.
	post func(p *Problem, rec map[string]json.RawMessage)
	pre  func(p *Problem) Problem
}

var adapters = map[Format]*adapter{
	FormatAlpaca: {
		format: FormatAlpaca, source: "code_alpaca",
		// Code Alpaca and Evol-Instruct: instruction/output; Magicoder's
		// Evol-Instruct: instruction/response; Magicoder OSS-Instruct:
		// problem/solution. The first field present wins.
		fields: []fieldMap{{src: "instruction", dst: TargetText}, {src: "problem", dst: TargetText},
			{src: "output", dst: TargetSolution}, {src: "response", dst: TargetSolution}, {src: "solution", dst: TargetSolution}},
		post: func(p *Problem, rec map[string]json.RawMessage) {
			var in string
			if json.Unmarshal(rec["input"], &in) == nil && strings.TrimSpace(in) != "" {
				p.Text += "\n\n" + in
			}
		},
		pre: func(p *Problem) Problem {
			q := *p
			var in string
			if json.Unmarshal(p.Extra["input"], &in) == nil && strings.TrimSpace(in) != "" {
				q.Text = strings.TrimSuffix(q.Text, "\n\n"+in)
			}
			return q
		},
	},
	FormatMBPP: {
		format: FormatMBPP, source: "mbpp", language: "python", idPrefix: "Mbpp/",
		fields: []fieldMap{{src: "task_id", dst: TargetID}, {src: "text", dst: TargetText}, {src: "code", dst: TargetSolution},
			{src: "test_list", dst: TargetTests, asList: true}, {src: "test_setup_code", dst: TargetSetup}},
	},
	FormatMBPPSanitize: {
		format: FormatMBPPSanitize, source: "mbpp", language: "python", idPrefix: "Mbpp/",
		fields: []fieldMap{{src: "task_id", dst: TargetID}, {src: "prompt", dst: TargetText}, {src: "code", dst: TargetSolution},
			{src: "test_list", dst: TargetTests, asList: true}},
		post: func(p *Problem, rec map[string]json.RawMessage) {
			var imps []string
			if json.Unmarshal(rec["test_imports"], &imps) == nil {
				p.TestImport = strings.Join(imps, "\n")
			}
		},
	},
	FormatHumanEval: {
		format: FormatHumanEval, source: "humaneval", language: "python",
		fields: []fieldMap{{src: "task_id", dst: TargetID}, {src: "prompt", dst: TargetText}, {src: "prompt", dst: TargetPrompt},
			{src: "canonical_solution", dst: TargetSolution}, {src: "test", dst: TargetTests}, {src: "entry_point", dst: TargetEntryPoint}},
	},
	FormatEvalPlus: {
		format: FormatEvalPlus, source: "evalplus", language: "python",
		fields: []fieldMap{{src: "task_id", dst: TargetID}, {src: "prompt", dst: TargetText}, {src: "prompt", dst: TargetPrompt},
			{src: "canonical_solution", dst: TargetSolution}, {src: "test", dst: TargetTests}, {src: "assertion", dst: TargetTests},
			{src: "entry_point", dst: TargetEntryPoint}},
	},
	FormatLeetCode: {
		format: FormatLeetCode, source: "leetcode", language: "python", idPrefix: "LeetCode/",
		fields: []fieldMap{{src: "task_id", dst: TargetID}, {src: "problem_description", dst: TargetText}, {src: "query", dst: TargetText},
			{src: "prompt", dst: TargetPrompt}, {src: "completion", dst: TargetSolution}, {src: "test", dst: TargetTests},
			{src: "entry_point", dst: TargetEntryPoint}},
		post: func(p *Problem, rec map[string]json.RawMessage) {
			var meta struct {
				Difficulty string `json:"difficulty"`
			}
			var diff string
			if json.Unmarshal(rec["difficulty"], &diff) != nil || diff == "" {
				if json.Unmarshal(rec["meta"], &meta) == nil {
					diff = meta.Difficulty
				}
			}
			if diff != "" {
				p.Metadata["difficulty"] = diff
			}
		},
	},
}

// genericAdapter maps columns named like the targets, overridden by mapping
// (target -> source field). Used for CSV and native records.
func genericAdapter(format Format, source string, mapping map[string]string) (*adapter, error) {
	a := &adapter{format: format, source: source}
	for _, t := range targets {
		src := t
		if m, ok := mapping[t]; ok {
			src = m
		}
		a.fields = append(a.fields, fieldMap{src: src, dst: t, asList: t == TargetTests && format != FormatCSV})
	}
	for t := range mapping {
		if !contains(targets, t) {
			return nil, fmt.Errorf("--map: unknown target field %q (want one of %s)", t, strings.Join(targets, ", "))
		}
	}
	return a, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// withMapping returns a copy of a whose source fields are renamed by mapping
// (target -> source field), so --map also works for the named formats.
func (a *adapter) withMapping(mapping map[string]string) (*adapter, error) {
	if len(mapping) == 0 {
		return a, nil
	}
	for t := range mapping {
		if !contains(targets, t) {
			return nil, fmt.Errorf("--map: unknown target field %q (want one of %s)", t, strings.Join(targets, ", "))
		}
	}
	b := *a
	b.fields = nil
	done := map[string]bool{}
	for _, f := range a.fields {
		if src, ok := mapping[f.dst]; ok {
			if done[f.dst] {
				continue
			}
			done[f.dst] = true
			f.src = src
		}
		b.fields = append(b.fields, f)
	}
	for t, src := range mapping {
		if !done[t] && !hasDst(a.fields, t) {
			b.fields = append(b.fields, fieldMap{src: src, dst: t})
		}
	}
	return &b, nil
}

func hasDst(fs []fieldMap, dst string) bool {
	for _, f := range fs {
		if f.dst == dst {
			return true
		}
	}
	return false
}

// toProblem maps one record. Errors name the offending field.
func (a *adapter) toProblem(rec map[string]json.RawMessage) (Problem, error) {
	p := Problem{Query: Query{Source: a.source, Language: a.language, Metadata: map[string]string{metaFormat: string(a.format)}}}
	used := map[string]bool{}
	set := map[string]bool{}
	extra := map[string]json.RawMessage{}
	for _, f := range a.fields {
		raw, ok := rec[f.src]
		if !ok || set[f.dst] || isNull(raw) {
			continue
		}
		if err := a.assign(&p, f, raw); err != nil {
			return p, fmt.Errorf("field %q: %w", f.src, err)
		}
		set[f.dst] = true
		if !used[f.src] {
			used[f.src] = true
			// Keep the original too when rendering back would not reproduce it.
			if back, err := a.render(&p, f); err != nil || !jsonEqual(back, raw) {
				extra[f.src] = raw
			}
		}
	}
	for k, v := range rec {
		if !used[k] {
			extra[k] = v
		}
	}
	for k, v := range extra {
		// Compact so the value is stored exactly as any JSON writer re-emits it.
		var buf bytes.Buffer
		if json.Compact(&buf, v) == nil {
			extra[k] = buf.Bytes()
		}
	}
	if len(extra) > 0 {
		p.Extra = extra
	}
	var mapped []string
	for k := range used {
		mapped = append(mapped, k)
	}
	sort.Strings(mapped)
	p.Metadata[metaMapped] = strings.Join(mapped, ",")
	if a.post != nil {
		a.post(&p, rec)
	}
	if p.ID == "" && strings.TrimSpace(p.Text) != "" {
		p.ID = QueryID(a.source, p.Text)
	}
	return p, nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func (a *adapter) assign(p *Problem, f fieldMap, raw json.RawMessage) error {
	if f.dst == TargetTests {
		if f.asList {
			var ts []string
			if err := json.Unmarshal(raw, &ts); err != nil {
				return fmt.Errorf("want a list of strings: %v", err)
			}
			p.Tests = ts
			return nil
		}
		s, err := scalarString(raw)
		if err != nil {
			return err
		}
		if s != "" {
			p.Tests = []string{s}
		}
		return nil
	}
	s, err := scalarString(raw)
	if err != nil {
		return err
	}
	if f.dst == TargetID {
		p.ID = a.idPrefix + s
	} else if field := textField(p, f.dst); field != nil {
		*field = s
	}
	return nil
}

// textField is the Problem field a plain text target names; nil for the
// targets with rules of their own (ID, tests).
func textField(p *Problem, target string) *string {
	switch target {
	case TargetText:
		return &p.Text
	case TargetSolution:
		return &p.Solution
	case TargetTestImport:
		return &p.TestImport
	case TargetSetup:
		return &p.Setup
	case TargetEntryPoint:
		return &p.EntryPoint
	case TargetPrompt:
		return &p.Prompt
	case TargetLanguage:
		return &p.Language
	}
	return nil
}

// scalarString reads a JSON string or number as text.
func scalarString(raw json.RawMessage) (string, error) {
	if isPlainNumber(raw) {
		return string(raw), nil // what the json.Number decode below returns
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var n json.Number
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("want a string or number, got %s", truncate(string(raw), 40))
}

// isPlainNumber reports whether raw is exactly one valid JSON number (no
// surrounding space), the common case of integer ids.
func isPlainNumber(raw []byte) bool {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return false
	}
	for _, c := range raw {
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			return false
		}
	}
	return json.Valid(raw)
}

// render is the inverse of assign for one field.
func (a *adapter) render(p *Problem, f fieldMap) (json.RawMessage, error) {
	var v any
	switch f.dst {
	case TargetID:
		v = strings.TrimPrefix(p.ID, a.idPrefix)
	case TargetTests:
		if f.asList {
			v = p.Tests
			if p.Tests == nil {
				v = []string{}
			}
		} else {
			v = strings.Join(p.Tests, "")
		}
	default:
		if field := textField(p, f.dst); field != nil {
			v = *field
		}
	}
	return json.Marshal(v)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// SourceRecord renders a problem back into the record of the format it was
// imported from (Metadata["format"]), field for field: the inverse of the
// import, used to prove imports lossless and to hand problems back to tools
// that expect the original layout.
func SourceRecord(p *Problem) (map[string]json.RawMessage, error) {
	f := Format(p.Metadata[metaFormat])
	a, ok := adapters[f]
	if !ok {
		return nil, fmt.Errorf("problem %s: no source format to render back to (metadata format %q)", p.ID, f)
	}
	q := *p
	if a.pre != nil {
		q = a.pre(p)
	}
	mapped := strings.Split(p.Metadata[metaMapped], ",")
	out := map[string]json.RawMessage{}
	for _, fm := range a.fields {
		if _, done := out[fm.src]; done || !contains(mapped, fm.src) {
			continue
		}
		b, err := a.render(&q, fm)
		if err != nil {
			return nil, err
		}
		out[fm.src] = b
	}
	for k, v := range q.Extra {
		out[k] = v
	}
	return out, nil
}

// detect picks a format from the fields of the first record.
func detect(rec map[string]json.RawMessage) (Format, error) {
	has := func(ks ...string) bool {
		for _, k := range ks {
			if _, ok := rec[k]; !ok {
				return false
			}
		}
		return true
	}
	switch {
	case has("messages"):
		return FormatCodeFeedback, nil
	case has("base_input") || has("plus_input"):
		return FormatEvalPlus, nil
	case has("completion", "entry_point"):
		return FormatLeetCode, nil
	case has("canonical_solution", "entry_point"):
		return FormatHumanEval, nil
	case has("text", "code", "test_list"):
		return FormatMBPP, nil
	case has("prompt", "code", "test_list"):
		return FormatMBPPSanitize, nil
	case has("instruction"), has("problem", "solution"):
		return FormatAlpaca, nil
	case has("id", "text"):
		return FormatNative, nil
	}
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "", fmt.Errorf("cannot detect the input format from fields %s; name it with --format", strings.Join(keys, ", "))
}

// ParseMapping parses "target=source,target=source" (and repeated flags).
func ParseMapping(specs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, spec := range specs {
		for _, kv := range strings.Split(spec, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("--map %q: want target=source", kv)
			}
			if !contains(targets, k) {
				return nil, fmt.Errorf("--map: unknown target field %q (want one of %s)", k, strings.Join(targets, ", "))
			}
			m[k] = v
		}
	}
	return m, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..." + strconv.Itoa(len(s)-n) + " more bytes"
}

// As says what an imported record becomes: a query (a request to answer,
// rated by filter and packed by pack) or a problem (judged by its tests).
type As string

// The choices of As. AsAuto makes a record with tests a problem and one
// without tests a query: an instruction/output pair (Code Alpaca,
// Evol-Instruct, Magicoder) has an answer but nothing that can judge
// another, so it is a query whose output is kept as its reference answer.
const (
	AsAuto    As = "auto"
	AsQuery   As = "query"
	AsProblem As = "problem"
)

// ParseAs checks an `as` choice ("" is AsAuto).
func ParseAs(s string) (As, error) {
	switch As(s) {
	case "", AsAuto:
		return AsAuto, nil
	case AsQuery, AsProblem:
		return As(s), nil
	}
	return "", fmt.Errorf("as %q: want auto, query or problem", s)
}

// IsQuery reports whether p is imported as a query under the choice a.
func (a As) IsQuery(p *Problem) bool {
	switch a {
	case AsQuery:
		return true
	case AsProblem:
		return p.Solution == "" && len(p.Tests) == 0 // nothing to judge with: a query whatever is asked
	}
	return len(p.Tests) == 0
}

// ExtraReference is the Extra key of a query's reference answer: the
// output of the instruction/output pair it was imported from.
const ExtraReference = "reference_answer"

// AsQuery returns p as a query, its solution (if any) kept as the
// reference answer (ReferenceAnswer).
func (p *Problem) AsQuery() Query {
	q := p.Query
	if strings.TrimSpace(p.Solution) != "" {
		b, _ := json.Marshal(p.Solution)
		extra := make(map[string]json.RawMessage, len(q.Extra)+1)
		for k, v := range q.Extra {
			extra[k] = v
		}
		extra[ExtraReference] = b
		q.Extra = extra
	}
	return q
}

// ReferenceAnswer returns the reference answer a query carries (see
// AsQuery), or "".
func ReferenceAnswer(q Query) string {
	var s string
	if raw, ok := q.Extra[ExtraReference]; ok {
		_ = json.Unmarshal(raw, &s)
	}
	return s
}
