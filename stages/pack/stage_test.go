package pack

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

var stageQueries = []string{
	"Write a Python function that returns the nth Fibonacci number using recursion.",
	"Reverse the words of a sentence in Python.",
	"Write a Python function that computes the nth Fibonacci number iteratively.",
	"Configure a firewall rule to block port 23.",
	"Reverse the order of words in a given sentence with Python.",
}

func clearEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "CODEFEEDBACK_LLM_BASE_URL", "CODEFEEDBACK_LLM_MODEL",
		"CODEFEEDBACK_LLM_API_KEY_ENV", "CODEFEEDBACK_PACK_BASE_URL", "CODEFEEDBACK_PACK_MODEL"} {
		t.Setenv(k, "")
	}
}

// runPack runs a pipeline of just the pack stage and returns its output items.
func runPack(t *testing.T, top, settings string) (*pipeline.Manifest, []pipeline.Item) {
	t.Helper()
	dir := t.TempDir()
	pipelinetest.WriteQueries(t, filepath.Join(dir, "q.jsonl"), stageQueries)
	out := filepath.Join(dir, "out.items.jsonl")
	y := fmt.Sprintf("inputs: [{path: q.jsonl}]\n%s\nstages:\n  - {stage: pack, settings: %s}\noutputs: [{path: %s, format: items}]\n",
		top, settings, out)
	cfg := pipelinetest.Load(t, dir, "run_dir: "+filepath.Join(dir, "run")+"\n"+y)
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	items := pipelinetest.Items(t, out)
	return m, items
}

func dialogues(t *testing.T, items []pipeline.Item) (ds []schema.Dialogue, leftovers []string) {
	for _, it := range items {
		switch it.Kind {
		case pipeline.KindDialogue:
			d, err := pipeline.As[schema.Dialogue](it, it.Kind)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		case pipeline.KindQuery:
			leftovers = append(leftovers, it.ID)
		}
	}
	return ds, leftovers
}

func TestPackStageUserTurns(t *testing.T) {
	clearEnv(t)
	m, items := runPack(t, "", "{sizes: [2], floor: 0.2}")
	ds, left := dialogues(t, items)
	var got []string
	for _, d := range ds {
		got = append(got, strings.Join(d.Sources, "+"))
		for _, msg := range d.Messages {
			if msg.Role != schema.RoleUser {
				t.Errorf("dialogue %s has a %s turn; unanswered dialogues hold user turns only", d.ID, msg.Role)
			}
		}
	}
	pairs := strings.Join(got, " ")
	for _, want := range [][2]string{{"q0", "q2"}, {"q1", "q4"}} {
		if !strings.Contains(pairs, want[0]+"+"+want[1]) && !strings.Contains(pairs, want[1]+"+"+want[0]) {
			t.Errorf("packed %q, want %s with %s", pairs, want[0], want[1])
		}
	}
	if strings.Join(left, ",") != "q3" {
		t.Errorf("leftovers %v, want [q3]", left)
	}
	st := m.Stages[0].Stats
	if st["groups/2"] != 2 || st["leftovers"] != 1 || st["index/exact"] != 1 || st["cos/within"] <= st["cos/random"] {
		t.Errorf("stats %v", st)
	}
}

func TestPackStageAnswersWithSandbox(t *testing.T) {
	clearEnv(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bwrap not installed")
	}
	srv := llmtest.New(t)
	var mu sync.Mutex
	seen := map[string]int{} // last user message -> messages in the request
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		mu.Lock()
		seen[c.LastUser()] = len(c.Request.Messages)
		mu.Unlock()
		if strings.Contains(c.LastUser(), "iteratively") {
			return llmtest.Reply{Text: "Iterative version:\n```python\na, b = 0, 1\nfor _ in range(10):\n    a, b = b, a + b\nprint(a)\n```"}
		}
		return llmtest.Reply{Text: "Recursive version:\n```python\ndef fib(n):\n    return n if n < 2 else fib(n-1) + fib(n-2)\nprint(fib(10))\n```"}
	})
	top := "executor: bwrap://\nmodel: {base_url: " + srv.URL + ", model: writer-1}"
	_, items := runPack(t, top, "{sizes: [2], floor: 0.2, answer: true}")
	ds, _ := dialogues(t, items)
	var fib *schema.Dialogue
	for i := range ds {
		if strings.Contains(ds[i].Messages[0].Content, "Fibonacci") {
			fib = &ds[i]
		}
	}
	if fib == nil {
		t.Fatalf("no Fibonacci dialogue in %d dialogues", len(ds))
	}
	var roles []string
	for _, m := range fib.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,execution,user,assistant,execution" {
		t.Fatalf("roles %s", got)
	}
	for _, i := range []int{2, 5} {
		e := fib.Messages[i].Exec
		if e == nil || e.ExitCode != 0 || strings.TrimSpace(e.Stdout) != "55" || e.Driver == "" {
			t.Errorf("execution %d = %+v, want exit 0 printing 55 from the sandbox", i, e)
		}
	}
	if fib.Model == "" || fib.Labels["executions"] != "2" || fib.Labels["failed_executions"] != "0" {
		t.Errorf("dialogue model %q labels %v", fib.Model, fib.Labels)
	}
	// The second request carries system + (user, assistant, execution) + user.
	second := fib.Messages[3].Content
	if n := seen[second]; n != 5 {
		t.Errorf("second turn was asked with %d messages, want 5 (previous turn and its output in context)", n)
	}
}
