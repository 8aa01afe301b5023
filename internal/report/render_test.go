package report

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/report/section"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

func TestHighlight(t *testing.T) {
	cases := []struct {
		lang, code, want string
	}{
		{"python", "def f(x):\n    return x  # done", `<span class="k">def</span> f(x):` + "\n    " + `<span class="k">return</span> x  <span class="c"># done</span>`},
		{"py", `s = f"a{b}" + 'c\'d'`, `s = <span class="s">f&#34;a{b}&#34;</span> + <span class="s">&#39;c\&#39;d&#39;</span>`},
		{"python", "x = '''a\n#b'''\ny = 12", `x = <span class="s">&#39;&#39;&#39;a` + "\n" + `#b&#39;&#39;&#39;</span>` + "\ny = " + `<span class="n">12</span>`},
		{"python", "print(len(a1))", `<span class="b">print</span>(<span class="b">len</span>(a1))`},
		{"bash", "for f in *.txt; do echo \"$f\" $HOME; done # x", `<span class="k">for</span> f <span class="k">in</span> *.txt; <span class="k">do</span> <span class="b">echo</span> <span class="s">&#34;$f&#34;</span> <span class="b">$HOME</span>; <span class="k">done</span> <span class="c"># x</span>`},
		{"sql", "SELECT name FROM t WHERE a = 'x' -- c", `<span class="k">SELECT</span> name <span class="k">FROM</span> t <span class="k">WHERE</span> a = <span class="s">&#39;x&#39;</span> <span class="c">-- c</span>`},
		{"", "<script>alert(1)</script>", `&lt;script&gt;alert(1)&lt;/script&gt;`},
		{"python", "x = '<b>' # </pre><script>", `x = <span class="s">&#39;&lt;b&gt;&#39;</span> <span class="c"># &lt;/pre&gt;&lt;script&gt;</span>`},
		{"python", "s = 'unterminated\nnext", `s = <span class="s">&#39;unterminated</span>` + "\nnext"},
		{"python", "café = 1", "café = " + `<span class="n">1</span>`},
	}
	for _, c := range cases {
		if got := string(Highlight(c.code, c.lang)); got != c.want {
			t.Errorf("Highlight(%q, %s):\ngot  %s\nwant %s", c.code, c.lang, got, c.want)
		}
	}
}

func TestSplitFences(t *testing.T) {
	got := splitFences("Here:\n\n```python\nx = 1\n```\nThen\n```\nplain\n```\n\n```sql\nopen")
	want := []part{{Text: "Here:"}, {Code: true, Lang: "python", Text: "x = 1"}, {Text: "Then"}, {Code: true, Text: "plain"}, {Code: true, Lang: "sql", Text: "open"}}
	if len(got) != len(want) {
		t.Fatalf("got %d parts %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Code != want[i].Code || got[i].Lang != want[i].Lang || got[i].Text != want[i].Text {
			t.Errorf("part %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestChartSVG(t *testing.T) {
	c := Chart{Title: `a "<b>"`, Bars: []Bar{{Label: "x<y", Value: 3}, {Label: "z", Value: 1}}}
	svg := string(c.SVG())
	if strings.Contains(svg, "<b>") || strings.Contains(svg, "x<y") || !strings.Contains(svg, "x&lt;y") {
		t.Errorf("labels not escaped: %s", svg)
	}
	if !strings.HasPrefix(svg, "<svg") || !strings.HasSuffix(svg, "</svg>") || strings.Count(svg, "<rect") != 2 {
		t.Errorf("want an svg with two bars: %s", svg)
	}
	p := Chart{Bars: []Bar{{Label: "a", Value: 0.0123}}, Percent: true}
	if !strings.Contains(string(p.SVG()), "1.23%") {
		t.Errorf("percent chart lacks 1.23%%: %s", p.SVG())
	}
	h := Chart{Histogram: true, Bars: []Bar{{Label: "1", Value: 2}, {Label: "2", Value: 0}, {Label: "3", Value: 4}}}
	if n := strings.Count(string(h.SVG()), "<rect"); n != 3 {
		t.Errorf("histogram: %d bars, want 3", n)
	}
	s := Chart{Rows: []Series{{Label: "it 1", Parts: []Bar{{Label: "pass", Value: 2}, {Label: "NameError", Value: 1}}, Total: 3}}}
	if out := string(s.SVG()); strings.Count(out, "<rect") != 4 || !strings.Contains(out, "NameError") { // 2 parts + 2 legend keys
		t.Errorf("stacked chart: %s", out)
	}
}

// writeRun lays out a run directory by hand: manifest and stage outputs.
func writeRun(t *testing.T, m *pipeline.Manifest, outputs map[string][]pipeline.Item) string {
	t.Helper()
	dir := t.TempDir()
	m.RunDir = dir
	for rel, items := range outputs {
		var b bytes.Buffer
		for _, it := range items {
			j, _ := json.Marshal(it)
			b.Write(append(j, '\n'))
		}
		p := filepath.Join(dir, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func dialogueItem(t *testing.T, d schema.Dialogue) pipeline.Item {
	t.Helper()
	it, err := pipeline.DialogueItem(d)
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// TestSections feeds the section builders the statistics keys the filter,
// dedup, simulate and pack stages write, and checks the charts drawn.
func TestSections(t *testing.T) {
	yes := true
	d1 := schema.Dialogue{ID: "dlg-a", Stage: "simulate", Method: "execution-feedback", Model: "m1", Prompt: "p1",
		Labels: map[string]string{"final_status": "pass"},
		Messages: []schema.Message{
			{Role: "user", Content: "Write <b>f</b>"},
			{Role: "assistant", Content: "```python\ndef f(): pass\n```"},
			{Role: "execution", Content: "Traceback: </script><script>alert(1)</script>", Exec: &schema.Execution{Language: "python", Exception: "NameError", ExitCode: 1, Duration: time.Millisecond}},
			{Role: "user", Content: "fix it", Feedback: &schema.Feedback{Category: "bugs"}},
			{Role: "execution", Content: "ok", Exec: &schema.Execution{Language: "python", Passed: &yes}},
		}}
	m := &pipeline.Manifest{Program: "codefeedback", Version: "t", Pipeline: "p.yaml", Status: "complete",
		Started: time.Unix(100, 0), Finished: time.Unix(130, 0),
		Stages: []pipeline.StageRecord{
			{Name: "dedup", Type: "dedup", Status: "ran", Stats: map[string]float64{"queries": 10, "kept": 8, "dropped/exact": 1, "dropped/near": 1}},
			{Name: "filter", Type: "filter", Status: "ran", Counts: pipeline.Counts{In: 8, Cached: 2}, Usage: pipeline.Usage{Requests: 16, PromptTokens: 4800, CompletionTokens: 640, CostUSD: 0.0123},
				Stats: map[string]float64{"score/effort/4": 3, "score/effort/5": 2, "score/effort/unrated": 1, "score/skills/2": 5, "kept": 5, "dropped": 2, "unrated": 1, "rated": 8}},
			{Name: "pack", Type: "pack", Status: "ran", Stats: map[string]float64{"cos/within": 0.41, "cos/random": 0.07, "groups/2": 3, "groups/3": 1, "seconds/embed": 0.1}},
			{Name: "simulate", Type: "simulate", Status: "ran", Output: "stages/simulate/out.jsonl",
				Stats: map[string]float64{"dialogues/pass": 1, "turns/5": 1, "outcome/1/NameError": 1, "outcome/2/pass": 1, "outcome/fb1.1/pass": 1, "feedback/category/bugs": 1, "feedback/non_oracle": 1}},
			{Name: "correct", Type: "correct", Status: "skipped"},
		},
		Outputs: []pipeline.OutputRecord{{Path: "nowhere.jsonl", Format: "jsonl", From: "simulate", Kind: "dialogue", Items: 1}}}
	dir := writeRun(t, m, map[string][]pipeline.Item{"stages/simulate/out.jsonl": {dialogueItem(t, d1)}})
	d, err := Collect(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	charts := map[string]Chart{}
	notRun := map[string]bool{}
	for _, s := range d.Sections {
		notRun[s.Type] = s.NotRun
		for _, in := range s.Instances {
			for _, c := range in.Charts {
				charts[c.ID] = c
			}
		}
	}
	// Only the pipeline's stages have sections; one without statistics (a
	// skipped stage) says it did not run.
	if want := map[string]bool{"filter": false, "pack": false, "simulate": false, "correct": true}; !maps.Equal(notRun, want) {
		t.Errorf("sections (type: not run): got %v, want %v", notRun, want)
	}
	bars := func(id string) map[string]float64 {
		c, ok := charts[id]
		if !ok {
			t.Errorf("no chart %s (have %v)", id, slices.Sorted(maps.Keys(charts)))
		}
		m := map[string]float64{}
		for _, b := range c.Bars {
			m[b.Label] = b.Value
		}
		for _, r := range c.Rows {
			m[r.Label] = r.Total
		}
		return m
	}
	checks := []struct {
		id   string
		want map[string]float64
	}{
		{"chart-filter-score-effort", map[string]float64{"1": 0, "2": 0, "3": 0, "4": 3, "5": 2, "unrated": 1}},
		{"chart-filter-score-skills", map[string]float64{"1": 0, "2": 5, "3": 0, "4": 0, "5": 0}},
		{"chart-filter-kept", map[string]float64{"kept": 5, "dropped": 2, "unrated": 1}},
		{"chart-dedup-kept", map[string]float64{"queries": 10, "kept": 8, "dropped: exact": 1, "dropped: near": 1}},
		{"chart-pack-similarity", map[string]float64{"mean cosine within packed groups": 0.41, "mean cosine within random groups": 0.07}},
		{"chart-pack-groups", map[string]float64{"2": 3, "3": 1}},
		{"chart-simulate-outcomes", map[string]float64{"run 1": 1, "run 2": 1, "feedback round 1, run 1": 1}},
		{"chart-simulate-feedback", map[string]float64{"bugs": 1}},
		{"chart-dataset-turns", nil},
	}
	for _, c := range checks[:len(checks)-1] {
		got := bars(c.id)
		if len(got) != len(c.want) {
			t.Errorf("%s: got %v, want %v", c.id, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s[%s]: got %v, want %v", c.id, k, got[k], v)
			}
		}
	}
	if rows := charts["chart-simulate-outcomes"].Rows; len(rows) == 3 && rows[2].Label != "feedback round 1, run 1" {
		t.Errorf("outcome rows order: %v; numbered iterations first", rows)
	}
	if got := d.Stages[1].CacheHit; got != 0.25 {
		t.Errorf("filter cache hit rate: got %v, want 0.25", got)
	}
	if d.Seconds != 30 {
		t.Errorf("duration: got %v, want 30", d.Seconds)
	}
	ds := d.Dataset
	if ds.Dialogues != 1 || ds.Executions != 2 || ds.Outcomes[0].Kinds["NameError"] != 1 || ds.Outcomes[1].Kinds["pass"] != 1 || ds.Feedback["bugs"] != 1 || ds.Models["m1"] != 1 {
		t.Errorf("dataset stats: %+v", ds)
	}

	var page bytes.Buffer
	if err := WriteHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	html := page.String()
	for _, bad := range []string{"<b>f</b>", "<script>alert(1)</script>"} {
		if strings.Contains(html, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	if strings.Contains(html, `id="section-audit"`) {
		t.Errorf("page has a section for audit, which the pipeline does not have")
	}
	for _, want := range []string{`id="section-pack"`, "stage not run (no correct", `without the reference solution <code class="muted">feedback/non_oracle</code>`, `id="chart-simulate-outcomes"`, "5440", "$0.0123", "25.0%", `data-id="dlg-a"`, `<span class="k">def</span>`, "feedback: bugs"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if got := embedded(t, html); got.Dataset.Dialogues != 1 || len(got.SampleIDs) != 1 {
		t.Errorf("embedded data: %d dialogues, sample %v", got.Dataset.Dialogues, got.SampleIDs)
	}
}

// TestAuditFromReportFile: an audit whose output was reused records only
// dialogues_out; the leakage comes from its report file.
func TestAuditFromReportFile(t *testing.T) {
	m := &pipeline.Manifest{Status: "complete", Stages: []pipeline.StageRecord{
		{Name: "audit", Type: "audit", Status: "unchanged", Stats: map[string]float64{"dialogues_out": 9}}}}
	dir := writeRun(t, m, nil)
	rep := `{"dialogues":10,"flagged":1,"line_ratio":0.02,"benchmarks":[{"name":"mbpp","line_ratio":0.02,"flagged":1,"tasks_hit":1},{"name":"humaneval","line_ratio":0,"flagged":0}]}`
	if err := os.WriteFile(filepath.Join(dir, "audit.report.json"), []byte(rep), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := Collect(context.Background(), dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Leak{{Stage: "audit", Benchmark: "humaneval", Dialogues: 10},
		{Stage: "audit", Benchmark: "mbpp", LineRatio: 0.02, Flagged: 1, Dialogues: 10, TasksHit: 1}}
	if len(d.Leakage) != len(want) {
		t.Fatalf("leakage: got %+v, want %+v", d.Leakage, want)
	}
	for i := range want {
		if d.Leakage[i] != want[i] {
			t.Errorf("leakage %d: got %+v, want %+v", i, d.Leakage[i], want[i])
		}
	}
}

func TestCollectNoManifest(t *testing.T) {
	if _, err := Collect(context.Background(), t.TempDir(), Options{}); err == nil {
		t.Error("Collect on an empty directory: want an error")
	}
}

// TestCorrectOperatorYield: with the correct stage's per-operator counts of
// mutants tried and kept, the report charts their ratio.
func TestCorrectOperatorYield(t *testing.T) {
	m := &pipeline.Manifest{Program: "codefeedback", Version: "t", Pipeline: "p.yaml", Status: "complete",
		Stages: []pipeline.StageRecord{{Name: "correct", Type: "correct", Status: "ran", Stats: map[string]float64{
			"dialogues": 3, "dialogues.logic": 3,
			"mutants/tried/logic_arith_swap": 4, "mutants/kept/logic_arith_swap": 3,
			"mutants/tried/logic_bool_flip": 2,
		}}}}
	d, err := Collect(context.Background(), writeRun(t, m, nil), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]float64
	for _, s := range d.Sections {
		for _, in := range s.Instances {
			for _, c := range in.Charts {
				if c.ID == section.ChartID("correct", "yield") {
					if !c.Percent {
						t.Errorf("yield chart is not in percent")
					}
					got = map[string]float64{}
					for _, b := range c.Bars {
						got[b.Label] = b.Value
					}
				}
			}
		}
	}
	want := map[string]float64{"logic_arith_swap (3/4)": 0.75, "logic_bool_flip (0/2)": 0}
	if !maps.Equal(got, want) {
		t.Errorf("yield chart bars: got %v, want %v", got, want)
	}
}
