package report

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"

	"gopkg.in/yaml.v3"
)

// cardYAML splits a card into its YAML header, decoded, and its body.
func cardYAML(t *testing.T, text string) (map[string]any, string) {
	t.Helper()
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		t.Fatal("card does not start with a YAML header")
	}
	head, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		t.Fatal("card header is not closed")
	}
	var h map[string]any
	if err := yaml.Unmarshal([]byte(head), &h); err != nil {
		t.Fatalf("card header: %v", err)
	}
	return h, body
}

// TestSampleRunCard checks the dataset card of the sample run against the
// exported file: sizes, features, data files, leakage.
func TestSampleRunCard(t *testing.T) {
	s := runSample(t)
	if len(s.written.Cards) != 1 {
		t.Fatalf("cards written: %v (skipped %v), want one", s.written.Cards, s.written.Skipped)
	}
	card := s.written.Cards[0]
	if filepath.Dir(card) != filepath.Dir(s.output) {
		t.Errorf("card %s is not beside the dataset %s", card, s.output)
	}
	b, err := os.ReadFile(card)
	if err != nil {
		t.Fatal(err)
	}
	h, body := cardYAML(t, string(b))
	want := recountFile(t, s.output)
	st, err := os.Stat(s.output)
	if err != nil {
		t.Fatal(err)
	}
	if h["license"] != "apache-2.0" {
		t.Errorf("license: got %v, want apache-2.0", h["license"])
	}
	for _, key := range []string{"task_categories", "language", "tags", "size_categories", "configs"} {
		if _, ok := h[key].([]any); !ok {
			t.Errorf("header %s: got %T, want a list", key, h[key])
		}
	}
	// One config per published file in the directory; dataset_info is a
	// map for one file, a list (by config_name) for several.
	configs := map[string]map[string]any{} // file name -> config
	for _, c := range h["configs"].([]any) {
		cfg := c.(map[string]any)
		df := cfg["data_files"].([]any)[0].(map[string]any)
		if df["split"] != "train" {
			t.Errorf("config %v: split %v, want train", cfg["config_name"], df["split"])
		}
		configs[df["path"].(string)] = cfg
	}
	infos := map[string]map[string]any{} // config name -> dataset_info entry
	switch v := h["dataset_info"].(type) {
	case map[string]any:
		infos["default"] = v
	case []any:
		for _, e := range v {
			m := e.(map[string]any)
			infos[m["config_name"].(string)] = m
		}
	}
	cfg := configs[filepath.Base(s.output)]
	if cfg == nil {
		t.Fatalf("no config for %s in %v", filepath.Base(s.output), h["configs"])
	}
	info := infos[cfg["config_name"].(string)]
	splits, _ := info["splits"].([]any)
	if len(splits) != 1 {
		t.Fatalf("splits: got %v, want one", info["splits"])
	}
	sp := splits[0].(map[string]any)
	if sp["name"] != "train" || sp["num_examples"] != want.dialogues || sp["num_bytes"] != int(st.Size()) {
		t.Errorf("split: got %v, want train with %d examples and %d bytes", sp, want.dialogues, st.Size())
	}
	// Every JSONL config declares id and messages of role and content; the
	// trainer layout (codefeedback export) declares nothing else and is the
	// default config.
	var trainer []string // configs in the trainer layout
	for name, info := range infos {
		feats := map[string]map[string]any{}
		for _, f := range info["features"].([]any) {
			m := f.(map[string]any)
			feats[m["name"].(string)] = m
		}
		if feats["id"]["dtype"] != "string" {
			t.Errorf("config %s: feature id: got %v, want dtype string", name, feats["id"])
		}
		msg := map[string]any{}
		for _, f := range feats["messages"]["list"].([]any) {
			m := f.(map[string]any)
			msg[m["name"].(string)] = m["dtype"]
		}
		if msg["role"] != "string" || msg["content"] != "string" {
			t.Errorf("config %s: feature messages: got %v, want list of role/content strings", name, feats["messages"])
		}
		if len(feats) == 2 && len(msg) == 2 {
			trainer = append(trainer, name)
		}
		sp := info["splits"].([]any)[0].(map[string]any)
		if sp["num_examples"] != want.dialogues {
			t.Errorf("config %s: %v examples, want %d", name, sp["num_examples"], want.dialogues)
		}
	}
	// The Code-Feedback layout is published as JSONL and Parquet: both are
	// configs with their features, and one of them is the default.
	if len(trainer) < 2 {
		t.Errorf("trainer-layout configs %v, want the JSONL and the Parquet file", trainer)
	}
	defaults := 0
	for _, c := range configs {
		if c["default"] == true {
			defaults++
			if !slices.Contains(trainer, c["config_name"].(string)) {
				t.Errorf("default config %v is not in the trainer layout", c["config_name"])
			}
		}
	}
	if defaults != 1 {
		t.Errorf("%d default configs, want 1", defaults)
	}
	if _, ok := configs["code_feedback.parquet"]; !ok {
		t.Errorf("the Parquet file is not a config: %v", h["configs"])
	}
	// Settings as YAML, cost of this run and of all runs.
	if !strings.Contains(body, "```yaml\n") || !strings.Contains(body, "\ncorrect:\n  settings:\n") {
		t.Errorf("card body lacks the settings as YAML:\n%s", body)
	}
	if !strings.Contains(body, "Model usage and cost: this run ") || !strings.Contains(body, "runs on this run directory") {
		t.Errorf("card body lacks this run's and the total cost:\n%s", body)
	}
	if !strings.Contains(body, "## How it was made") || !strings.Contains(body, "| correct | correct |") {
		t.Errorf("card body lacks the stage table:\n%s", body)
	}
	if strings.Contains(body, "No audit stage ran") {
		t.Errorf("the sample pipeline has an audit stage, but the card says none ran:\n%s", body)
	}
	if !s.audited && !strings.Contains(body, "ran, but had no benchmark files") {
		t.Errorf("the audit had no benchmarks, but the card does not say so:\n%s", body)
	}
	// The counts of labels a stage's section names (correct's bug kinds and
	// operators) stand in the contents, between the report's own counts.
	contents := body[strings.Index(body, "## Contents"):]
	order := []string{"- methods: ", "- final status: ", "- bug kinds: ", "- mutation operators: ", "- messages per dialogue: "}
	at := 0
	for _, w := range order {
		i := strings.Index(contents[at:], w)
		if i < 0 {
			t.Fatalf("card contents lack %q after %q:\n%s", w, contents[:at], contents)
		}
		at += i + len(w)
	}
}

func TestInferFeatures(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "d.jsonl")
	lines := `{"id":"a","messages":[{"role":"user","content":"hi"}],"labels":{"x":"1"},"n":1,"sources":["q1"]}
{"id":"b","messages":[{"role":"assistant","content":"yo","exec":{"exit_code":0,"passed":true}}],"labels":{"y":"2"},"n":2.5,"sources":[],"extra":null}
`
	if err := os.WriteFile(p, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, ok, err := InspectFile(p)
	if err != nil || !ok {
		t.Fatalf("InspectFile: ok %v err %v", ok, err)
	}
	if fi.Examples != 2 || fi.Bytes != int64(len(lines)) {
		t.Errorf("got %d examples %d bytes, want 2 and %d", fi.Examples, fi.Bytes, len(lines))
	}
	out, err := yaml.Marshal(fi.Features)
	if err != nil {
		t.Fatal(err)
	}
	want := `- name: id
  dtype: string
- name: labels
  struct:
    - name: x
      dtype: string
    - name: "y"
      dtype: string
- name: messages
  list:
    - name: content
      dtype: string
    - name: role
      dtype: string
    - name: exec
      struct:
        - name: exit_code
          dtype: int64
        - name: passed
          dtype: bool
- name: "n"
  dtype: float64
- name: sources
  sequence: string
- name: extra
  dtype: "null"
`
	if string(out) != want {
		t.Errorf("features:\n%s\nwant:\n%s", out, want)
	}
	// Not a dialogue file: no card.
	q := filepath.Join(dir, "q.jsonl")
	os.WriteFile(q, []byte(`{"id":"a","text":"x"}`+"\n"), 0o644)
	if _, ok, err := InspectFile(q); ok || err != nil {
		t.Errorf("InspectFile(queries): ok %v err %v, want not ok", ok, err)
	}
}

func TestSizeCategory(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "n<1K"}, {999, "n<1K"}, {1000, "1K<n<10K"}, {68000, "10K<n<100K"}, {150_000, "100K<n<1M"}, {2_000_000, "1M<n<10M"}} {
		if got := sizeCategory(c.n); got != c.want {
			t.Errorf("sizeCategory(%d) = %s, want %s", c.n, got, c.want)
		}
	}
}

// TestDeriveLicense: the card's licence comes from the inputs' when every
// one is known: a benchmark file by its SHA-256, a FILE.license, or a
// dataset card beside the input.
func TestDeriveLicense(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	side := write("a/problems.jsonl", "{}\n")
	write("a/problems.jsonl.license", "CC-BY-4.0\n")
	carded := write("b/queries.jsonl", "{}\n")
	write("b/README.md", "---\nlicense: mit\npretty_name: x\n---\n# x\n")
	bare := write("c/other.jsonl", "{}\n")
	mbpp := pipeline.InputRecord{Path: "/nowhere/mbpp.jsonl", SHA256: "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f"}
	lic := func(ins ...pipeline.InputRecord) any {
		var ls []InputLicense
		for _, in := range ins {
			ls = append(ls, inputLicense(in))
		}
		return deriveLicense("", ls)
	}
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"sidecar", lic(pipeline.InputRecord{Path: side}), "cc-by-4.0"},
		{"card", lic(pipeline.InputRecord{Path: carded}), "mit"},
		{"benchmark by hash", lic(mbpp), "cc-by-4.0"},
		{"same twice", lic(pipeline.InputRecord{Path: side}, mbpp), "cc-by-4.0"},
		{"different", lic(pipeline.InputRecord{Path: side}, pipeline.InputRecord{Path: carded}), []string{"cc-by-4.0", "mit"}},
		{"one unknown", lic(pipeline.InputRecord{Path: carded}, pipeline.InputRecord{Path: bare}), "unknown"},
		{"override", deriveLicense("apache-2.0", nil), "apache-2.0"},
	} {
		if fmt.Sprint(tc.got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: licence %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// The dataset summary counts the labels the stages' sections name: by
// value, or, for a Marked label, the dialogues that carry it.
func TestDatasetLabelsFromSections(t *testing.T) {
	var byKey = map[string]section.DatasetLabel{}
	for _, l := range section.DatasetLabels() {
		byKey[l.Key] = l
	}
	if byKey["bug_kind"].Title == "" || byKey["audit"].Marked == "" {
		t.Fatalf("the correct and audit sections name no dataset labels: %+v", byKey)
	}
	dls := []schema.Dialogue{
		{ID: "a", Stage: "correct", Labels: map[string]string{"bug_kind": "runtime", "mutation_op": "swap", "audit": "HumanEval/1 lines"}},
		{ID: "b", Stage: "correct", Labels: map[string]string{"bug_kind": "runtime"}},
		{ID: "c", Stage: "correct", Labels: map[string]string{"bug_kind": "syntax", "audit": "MBPP/2 lines"}},
	}
	var ds DatasetStats
	samples := map[string]bool{}
	for _, dl := range dls {
		samples[ds.countLabels(section.DatasetLabels(), &dl)] = true
	}
	if len(samples) != 2 {
		t.Errorf("the sample groups by bug kind: got %d groups, want 2 (runtime, syntax)", len(samples))
	}
	if got := ds.Labels["bug_kind"]; got["runtime"] != 2 || got["syntax"] != 1 || len(got) != 2 {
		t.Errorf("bug kinds: got %v", got)
	}
	if got := ds.Labels["audit"]; got[""] != 2 || len(got) != 1 {
		t.Errorf("audit, a marked label: got %v, want 2 under \"\"", got)
	}
	if got := ds.Marked(); !slices.Equal(got, []string{"2 labelled by the audit"}) {
		t.Errorf("Marked() = %q", got)
	}
}
