package leetcode

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// sandbox opens the real sandbox: bubblewrap, or the URL in
// $CODEFEEDBACK_LEETCODE_SANDBOX (e.g. docker://codefeedback-sandbox:bookworm).
func sandbox(tb testing.TB) executors.Executor {
	return sandboxtest.Open(tb, "CODEFEEDBACK_LEETCODE_SANDBOX", "")
}

func loadLeetCode(tb testing.TB, rel string) []schema.Problem {
	tb.Helper()
	ps, err := schema.LoadProblems(sharedtest.Path(tb, rel))
	if err != nil {
		tb.Fatal(err)
	}
	var out []schema.Problem
	for _, p := range ps {
		if Eligible(p) {
			out = append(out, p)
		}
	}
	return out
}

// assistantCode is the code of every assistant turn with a code block,
// with the problem it answers (by position in the chain).
func assistantCode(d schema.Dialogue) []string {
	var out []string
	for _, m := range d.Messages {
		if m.Role != schema.RoleAssistant {
			continue
		}
		if code, err := parse.Code(m.Content, "python"); err == nil {
			out = append(out, code)
		}
	}
	return out
}

// TestReferenceChainsRealData builds model-free chains from the 200-problem
// LeetCodeDataset test file and re-runs every solution shown against its
// problem's tests.
func TestReferenceChainsRealData(t *testing.T) {
	ps := loadLeetCode(t, "leetcode/LeetCodeDataset-v0.2.0-test.jsonl.gz")
	ex := sandbox(t)
	ctx := context.Background()
	o := DefaultOptions
	g := &Generator{Opts: o, Exec: ex, Embedder: embed.NewTFIDF(embed.DefaultDim)}
	out, err := g.Generate(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]schema.Problem{}
	for _, p := range ps {
		byID[p.ID] = p
	}
	used := map[string]string{}
	lengths := map[int]int{}
	var jobs []harness.Job
	for _, d := range out.Dialogues {
		n := len(d.Sources)
		lengths[n]++
		if n < 2 || n > 3 {
			t.Errorf("%s: got a chain of %d problems, want 2 or 3", d.ID, n)
		}
		for _, id := range d.Sources {
			if prev, ok := used[id]; ok {
				t.Errorf("problem %s used in %s and %s", id, prev, d.ID)
			}
			used[id] = d.ID
		}
		codes := assistantCode(d)
		if len(codes) != n {
			t.Fatalf("%s: got %d code turns, want %d", d.ID, len(codes), n)
		}
		for i, m := range d.Messages {
			if m.Role == schema.RoleExecution && (m.Exec == nil || m.Exec.Passed == nil || !*m.Exec.Passed) {
				t.Errorf("%s message %d: execution turn does not record a pass: %q", d.ID, i, m.Content)
			}
		}
		for i, id := range d.Sources {
			jobs = append(jobs, harness.Job{Problem: byID[id], Code: codes[i]})
		}
		if d.Labels["final_status"] != "pass" {
			t.Errorf("%s: got final_status %q, want pass", d.ID, d.Labels["final_status"])
		}
	}
	// Re-run every solution shown, independently of the stage's own runs.
	vs, err := harness.JudgeMany(ctx, ex, jobs, harness.Options{}, o.Parallel)
	if err != nil {
		t.Fatal(err)
	}
	passed := 0
	for i, v := range vs {
		if v.Passed {
			passed++
		} else {
			t.Errorf("re-run of %s failed:\n%s", jobs[i].Problem.ID, v.Feedback)
		}
	}
	if len(out.Dialogues) < 20 {
		t.Errorf("got %d chains from %d problems, want at least 20", len(out.Dialogues), len(ps))
	}
	t.Logf("%d problems, %d eligible, %d reference failures %v; %d chains (lengths %v) using %d problems; re-run: %d/%d solutions pass",
		len(ps), out.Eligible, len(out.ReferenceFailed), out.ReferenceFailed, len(out.Dialogues), lengths, len(used), passed, len(vs))

	// Chains are a function of the problems and the seed.
	good := slices.DeleteFunc(slices.Clone(ps), func(p schema.Problem) bool { return slices.Contains(out.ReferenceFailed, p.ID) })
	a, err := Chains(ctx, embed.NewTFIDF(embed.DefaultDim), good, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Chains(ctx, embed.NewTFIDF(embed.DefaultDim), good, o)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("two groupings with the same seed differ")
	}
	var fromGenerate []string
	for _, d := range out.Dialogues {
		fromGenerate = append(fromGenerate, strings.Join(d.Sources, ","))
	}
	var fromChains []string
	for _, grp := range a {
		var ids []string
		for _, x := range grp {
			ids = append(ids, good[x].ID)
		}
		fromChains = append(fromChains, strings.Join(ids, ","))
	}
	if !slices.Equal(fromGenerate, fromChains) {
		t.Error("Generate's chains differ from a fresh grouping of the same problems and seed")
	}
	o2 := o
	o2.Seed = 2
	c, err := Chains(ctx, embed.NewTFIDF(embed.DefaultDim), good, o2)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("seeds 1 and 2 gave the same chains")
	}
}
