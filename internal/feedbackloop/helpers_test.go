package feedbackloop

import (
	"context"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// sandbox opens the real sandbox: bubblewrap, or the URL in
// $CODEFEEDBACK_SIMULATE_SANDBOX (e.g. docker://codefeedback-sandbox:bookworm).
func sandbox(tb testing.TB, query string) executors.Executor {
	return sandboxtest.Open(tb, "CODEFEEDBACK_SIMULATE_SANDBOX", query)
}

// fake starts a scripted model and returns a client for it (cached in cache
// when non-nil).
func fake(tb testing.TB, script llmtest.Script, cache *llmtest.MemCache, opts ...llmtest.Option) (*llmtest.Server, *llm.Client) {
	tb.Helper()
	srv := llmtest.New(tb, opts...)
	srv.Script(script)
	o := llm.Options{HTTPClient: srv.Client()}
	if cache != nil {
		o.Cache = cache
	}
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake-chat"}, Concurrency: 64}, o)
	if err != nil {
		tb.Fatal(err)
	}
	return srv, c
}

// runMBPP runs one simulated dialogue of New(o, writer, judge, feedback, ex)
// on mbppLike, failing the test on any error.
func runMBPP(tb testing.TB, o Options, writer, judge, feedback llm.Chatter, ex executors.Executor) Result {
	return runTask(tb, o, writer, judge, feedback, ex, func(s *Simulator) (Task, error) { return s.TaskFromProblem(mbppLike) })
}

// runTask is runMBPP on the task that task makes.
func runTask(tb testing.TB, o Options, writer, judge, feedback llm.Chatter, ex executors.Executor, task func(*Simulator) (Task, error)) Result {
	tb.Helper()
	s, err := New(o, writer, judge, feedback, ex)
	if err != nil {
		tb.Fatal(err)
	}
	tk, err := task(s)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := s.Run(context.Background(), tk)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

func block(code string) string { return "```python\n" + code + "\n```" }

// sumAnswer is the writer's first answer to mbppLike: its solution, which
// passes the tests.
var sumAnswer = llmtest.Reply{Text: "Return the sum.\n\n" + block(mbppLike.Solution)}

// requestHas reports whether any message of the request contains s.
func requestHas(c llmtest.Call, s string) bool {
	for _, m := range c.Request.Messages {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}
