package filter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

func TestDedupExactAndNear(t *testing.T) {
	long := "Write a Python function that takes a list of integers and returns the length of the longest strictly increasing subsequence using dynamic programming"
	texts := []string{
		long, // 0 kept
		"  write a PYTHON function that takes a list of integers and returns the length of the longest strictly increasing subsequence using dynamic   programming ", // exact dup of 0
		strings.Replace(long, "integers", "numbers", 1),                              // near dup of 0
		"Reverse a string in Go",                                                     // 3 kept
		"Reverse a linked list in place in C",                                        // shares words with 3, Jaccard below 0.8
		"Implement a thread-safe LRU cache in Java with O(1) get and put operations", // kept
	}
	want := []Verdict{{Of: -1}, {Kind: "exact", Of: 0}, {Kind: "near", Of: 0}, {Of: -1}, {Of: -1}, {Of: -1}}
	d := NewDedup(0.8, 5)
	for i, tx := range texts {
		got := d.Add(tx)
		if got.Kind != want[i].Kind || got.Of != want[i].Of {
			t.Errorf("text %d: got %+v want kind %q of %d (exact Jaccard to 0: %.2f)", i, got, want[i].Kind, want[i].Of, Jaccard(tx, long, 5))
		}
	}
	if j := Jaccard(texts[3], texts[4], 5); j >= 0.8 {
		t.Fatalf("test texts 3 and 4 have Jaccard %.2f; the case needs < 0.8", j)
	}
	// Exact-only mode keeps near duplicates.
	d = NewDedup(0, 5)
	for i, tx := range texts[:3] {
		if got := d.Add(tx); (got.Kind == "exact") != (i == 1) || got.Kind == "near" {
			t.Errorf("exact-only: text %d got %+v", i, got)
		}
	}
}

func TestMinHashEstimatesJaccard(t *testing.T) {
	base := "Given a binary tree, return the level order traversal of its nodes values from left to right, level by level"
	variants := []string{
		strings.Replace(base, "binary tree", "binary search tree", 1),
		strings.Replace(base, "from left to right, level by level", "", 1),
		"Given a linked list, return it reversed",
		strings.ToUpper(base[:50]) + base[50:],
	}
	d := NewDedup(0.8, 5)
	s0 := d.signature(schema.NormalizeText(base))
	for _, v := range variants {
		s := d.signature(schema.NormalizeText(v))
		est, exact := similarity(&s0, &s), Jaccard(base, v, 5)
		if diff := est - exact; diff > 0.15 || diff < -0.15 {
			t.Errorf("estimate %.3f vs exact %.3f for %q", est, exact, v)
		}
	}
}

func TestParseRating(t *testing.T) {
	tests := []struct {
		text   string
		score  int
		reason string
	}{
		{"Score: 4\nReason: needs dynamic programming.", 4, "needs dynamic programming."},
		{`{"score": 5, "reason": "distributed consensus"}`, 5, "distributed consensus"},
		{"```json\n{\"difficulty\": \"2\", \"reason\": \"a loop\"}\n```", 2, "a loop"},
		{"**3** - a class with a few methods", 3, ""},
		{"I'd rate this 4/5. Reasoning: graph search with edge cases", 4, "graph search with edge cases"},
		{"1\nJust a print statement.", 1, "Just a print statement."},
		{"Difficulty: four. Reason = heavy recursion", 4, "heavy recursion"},
	}
	for _, tt := range tests {
		a, err := parseRating(tt.text)
		if err != nil {
			t.Errorf("parseRating(%q): %v", tt.text, err)
			continue
		}
		if a.Score != tt.score || (tt.reason != "" && a.Reason != tt.reason) {
			t.Errorf("parseRating(%q) = %+v, want score %d reason %q", tt.text, a, tt.score, tt.reason)
		}
	}
	for _, bad := range []string{"", "I cannot help with that.", "The weather is nice today.", "Score: 9"} {
		if a, err := parseRating(bad); err == nil {
			t.Errorf("parseRating(%q) = %+v, want an error", bad, a)
		}
	}
}

func TestRuleDecide(t *testing.T) {
	r := func(scores ...int) []schema.Rating {
		var out []schema.Rating
		for _, s := range scores {
			out = append(out, schema.Rating{Score: s})
		}
		return out
	}
	tests := []struct {
		rule    string
		keep    []int
		ratings []schema.Rating
		kept    bool
		unrated bool
	}{
		{"both", []int{4, 5}, r(4, 5), true, false},
		{"both", []int{4, 5}, r(4, 3), false, false},
		{"either", []int{4, 5}, r(4, 3), true, false},
		{"either", []int{4, 5}, r(2, 3), false, false},
		{"mean>=3.5", nil, r(4, 3), true, false},
		{"mean >= 4", nil, r(4, 3), false, false},
		{"both", []int{1, 2}, r(1, 2), true, false},
		{"either", []int{4, 5}, r(5, 0), false, true},
		{"both", []int{4, 5}, nil, false, false},
	}
	for _, tt := range tests {
		rule, err := ParseRule(tt.rule, tt.keep)
		if err != nil {
			t.Fatal(err)
		}
		kept, unrated := rule.Decide(tt.ratings)
		if kept != tt.kept || unrated != tt.unrated {
			t.Errorf("%s keep %v on %v: got kept=%v unrated=%v, want %v %v", tt.rule, tt.keep, tt.ratings, kept, unrated, tt.kept, tt.unrated)
		}
	}
	for _, bad := range []string{"mean>=7", "most", "mean>=x"} {
		if _, err := ParseRule(bad, nil); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

// rubricOf tells which rubric a prompt is from.
func rubricOf(prompt string) string {
	if strings.Contains(prompt, "how much knowledge") {
		return "skills"
	}
	return "effort"
}

// scripted answers ratings by a "[s=N e=M]" tag in the query text; "[garbage]"
// answers nonsense every time (also to the repair prompt).
func scripted(c llmtest.Call) llmtest.Reply {
	first := c.Request.Messages[0].Content
	if strings.Contains(first, "[garbage]") {
		return llmtest.Reply{Text: "The sky is blue and the grass is green."}
	}
	var s, e int
	if i := strings.Index(first, "[s="); i >= 0 {
		fmt.Sscanf(first[i:], "[s=%d e=%d]", &s, &e)
	}
	if rubricOf(first) == "skills" {
		return llmtest.Reply{Text: fmt.Sprintf("Score: %d\nReason: skills tag", s)}
	}
	return llmtest.Reply{Text: fmt.Sprintf(`{"score": %d, "reason": "effort tag"}`, e)}
}

type runResult struct {
	man     *pipeline.Manifest
	queries []schema.Query
	ratings []schema.Rating
}

func runFilter(t *testing.T, dir, modelSection, filterSettings string, texts []string) runResult {
	t.Helper()
	pipelinetest.WriteQueries(t, filepath.Join(dir, "q.jsonl"), texts)
	y := fmt.Sprintf(`
inputs: [{path: q.jsonl}]
%s
stages:
  - {stage: dedup}
  - {stage: filter, concurrency: 4, settings: %s}
outputs:
  - {path: %s, from: filter, kind: query}
  - {path: %s, from: filter, kind: rating}
`, modelSection, filterSettings, filepath.Join(dir, "kept.jsonl"), filepath.Join(dir, "ratings.jsonl"))
	cfg := pipelinetest.Load(t, dir, "run_dir: "+filepath.Join(dir, "run")+"\n"+y)
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var res runResult
	res.man = m
	readJSONL(t, filepath.Join(dir, "kept.jsonl"), &res.queries)
	readJSONL(t, filepath.Join(dir, "ratings.jsonl"), &res.ratings)
	return res
}

func readJSONL[T any](t *testing.T, path string, out *[]T) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		*out = append(*out, v)
	}
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEFEEDBACK_LLM_BASE_URL", "CODEFEEDBACK_LLM_MODEL",
		"CODEFEEDBACK_LLM_API_KEY_ENV", "CODEFEEDBACK_FILTER_BASE_URL", "CODEFEEDBACK_FILTER_MODEL"} {
		t.Setenv(k, "")
	}
}

var filterTexts = []string{
	"Implement a lock-free queue [s=5 e=5]",
	"implement a LOCK-FREE queue [s=5 e=5]", // exact duplicate: never rated
	"Print hello world [s=1 e=1]",
	"Find the shortest path in a weighted graph with Dijkstra [s=4 e=3]",
	"Write a SQL query joining three tables and ranking rows per group [s=4 e=4]",
	"Explain something [garbage]",
}

func TestFilterStage(t *testing.T) {
	clearEnv(t)
	srv := llmtest.New(t)
	srv.Script(scripted)
	dir := t.TempDir()
	model := "model: {base_url: " + srv.URL + ", model: rater-1}"
	res := runFilter(t, dir, model, "{}", filterTexts)

	var kept []string
	for _, q := range res.queries {
		kept = append(kept, q.ID)
	}
	if got := strings.Join(kept, ","); got != "q0,q4" {
		t.Errorf("kept %s, want q0,q4 (both rubrics 4-5)", got)
	}
	if res.queries[0].Metadata["difficulty.skills"] != "5" || res.queries[0].Metadata["difficulty.effort"] != "5" {
		t.Errorf("kept query metadata %v, want difficulty.skills/effort = 5", res.queries[0].Metadata)
	}
	if len(res.ratings) != 10 {
		t.Fatalf("got %d ratings, want 10 (5 unique queries x 2 rubrics)", len(res.ratings))
	}
	var unrated []schema.Rating
	for _, r := range res.ratings {
		if r.Score == 0 {
			unrated = append(unrated, r)
		}
		if r.Model != "rater-1" {
			t.Errorf("rating model %q, want rater-1", r.Model)
		}
	}
	if len(unrated) != 2 || unrated[0].QueryID != "q5" || !strings.Contains(unrated[0].Raw, "sky is blue") {
		t.Errorf("unrated ratings %+v, want both rubrics of q5 with the raw answer", unrated)
	}
	// garbage: first answer + one repair per rubric = 4 calls; others 4 queries x 2.
	if got := srv.Calls("/v1/chat/completions"); got != 12 {
		t.Errorf("chat calls = %d, want 12 (8 ratings + 2x2 for the unreadable one)", got)
	}
	repaired := 0
	for _, r := range srv.Requests() {
		if r.Chat != nil && len(r.Chat.Messages) == 3 && strings.Contains(r.Chat.Messages[2].Content, "could not read a score") {
			repaired++
		}
	}
	if repaired != 2 {
		t.Errorf("repair prompts sent = %d, want 2", repaired)
	}
	ds, fs := pipelinetest.Stage(t, res.man, "dedup").Stats, pipelinetest.Stage(t, res.man, "filter").Stats
	if ds["dropped/exact"] != 1 || ds["kept"] != 5 {
		t.Errorf("dedup stats %v, want 1 exact drop, 5 kept", ds)
	}
	want := map[string]float64{"queries": 5, "rated": 4, "kept": 2, "dropped": 3, "unrated": 1,
		"gate/rubric_skills/checked": 5, "gate/rubric_skills/rejected": 1, "gate/rubric_effort/reason/unreadable": 1,
		"score/skills/5": 1, "score/skills/4": 2, "score/skills/1": 1, "score/skills/unrated": 1,
		"score/effort/3": 1, "score/effort/unrated": 1}
	for k, v := range want {
		if fs[k] != v {
			t.Errorf("filter stats[%s] = %v, want %v (all: %v)", k, fs[k], v, fs)
		}
	}

	// Re-threshold: either rubric 4-5, unreadable kept. Same run dir: every
	// answer comes from the cache, nothing is paid again.
	calls := srv.Calls("/v1/chat/completions")
	res = runFilter(t, dir, model, "{rule: either, unrated: keep}", filterTexts)
	if got := srv.Calls("/v1/chat/completions"); got != calls {
		t.Errorf("re-threshold made %d new model calls, want 0", got-calls)
	}
	kept = kept[:0]
	for _, q := range res.queries {
		kept = append(kept, q.ID)
	}
	if got := strings.Join(kept, ","); got != "q0,q3,q4,q5" {
		t.Errorf("either+keep unrated kept %s, want q0,q3,q4,q5", got)
	}
	if res.queries[3].Metadata["difficulty.skills"] != "unrated" {
		t.Errorf("kept unrated query metadata %v", res.queries[3].Metadata)
	}
}

func TestFilterWithoutModelPassesThrough(t *testing.T) {
	clearEnv(t)
	dir := t.TempDir()
	res := runFilter(t, dir, "model: {model: gpt-4o-mini}", "{}", filterTexts)
	if len(res.queries) != 5 || len(res.ratings) != 0 {
		t.Errorf("got %d queries %d ratings, want the 5 deduplicated queries unrated", len(res.queries), len(res.ratings))
	}
	if s := pipelinetest.Stage(t, res.man, "filter").Stats; s["skipped_no_model"] != 5 {
		t.Errorf("stats %v, want skipped_no_model 5", s)
	}
}

func TestRaterErrors(t *testing.T) {
	clearEnv(t)
	srv := llmtest.New(t)
	srv.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 500}, llmtest.Fault{Kind: llmtest.Status, Status: 500})
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "m"}, MaxAttempts: 1}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRater(c, "m", Rubrics, 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Rate(context.Background(), schema.Query{ID: "x", Text: "task"})
	if !errors.Is(err, llm.ErrRetriesExhausted) {
		t.Errorf("Rate error = %v, want retries exhausted (a transient failure, not an unrated query)", err)
	}
	if _, err := NewRater(c, "m", []string{"nope"}, 1); err == nil {
		t.Error("NewRater accepted an unknown rubric")
	}
	if !errors.Is(parseErr(t), parse.ErrNoScore) {
		t.Error("garbage answer does not report ErrNoScore")
	}
}

func parseErr(t *testing.T) error {
	_, err := parseRating("no digits here at all")
	return err
}
