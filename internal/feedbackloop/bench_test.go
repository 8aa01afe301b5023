package feedbackloop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// timedChatter and timedExecutor sum the time spent inside the model and
// the sandbox, so the loop's own cost can be separated from them.
type timedChatter struct {
	c  llm.Chatter
	ns *atomic.Int64
}

func (t timedChatter) Chat(ctx context.Context, r llm.Request) (llm.Response, error) {
	s := time.Now()
	defer func() { t.ns.Add(int64(time.Since(s))) }()
	return t.c.Chat(ctx, r)
}

type timedExecutor struct {
	executors.Executor
	ns *atomic.Int64
}

func (t timedExecutor) Run(ctx context.Context, r executors.Request) (executors.Result, error) {
	s := time.Now()
	defer func() { t.ns.Add(int64(time.Since(s))) }()
	return t.Executor.Run(ctx, r)
}

// benchProblem is problem i: add two numbers under a distinct name.
func benchProblem(i int) schema.Problem {
	fn := fmt.Sprintf("add_%d", i)
	return schema.Problem{Query: schema.Query{ID: fn, Text: "Write a function " + fn + " that adds two numbers."},
		Solution: "def " + fn + "(a, b):\n    return a + b",
		Tests:    []string{"assert " + fn + "(1, 2) == 3", "assert " + fn + "(-1, 1) == 0"}}
}

// threeIterations answers wrong twice, then right: three model calls and
// three test runs per dialogue.
func threeIterations(c llmtest.Call) llmtest.Reply {
	task := c.Request.Messages[min(1, len(c.Request.Messages)-1)].Content
	fn := strings.Fields(strings.TrimPrefix(task, "Write a function "))[0]
	switch c.AssistantTurns() {
	case 0:
		return llmtest.Reply{Text: "Subtract.\n\n" + block("def "+fn+"(a, b):\n    return a - b")}
	case 1:
		return llmtest.Reply{Text: "Multiply.\n\n" + block("def "+fn+"(a, b):\n    return a * b")}
	}
	return llmtest.Reply{Text: "Add.\n\n" + block("def "+fn+"(a, b):\n    return a + b")}
}

// BenchmarkOverhead measures the loop's own cost per three-iteration
// dialogue: wall time minus the time inside the model client (a real HTTP
// round trip to an instant fake model) and inside the sandbox (bwrap).
func BenchmarkOverhead(b *testing.B) {
	ex := sandbox(b, "")
	var modelNS, execNS atomic.Int64
	_, c := fake(b, threeIterations, nil, llmtest.WithoutRecording())
	s, err := New(Options{FeedbackRounds: 0}, timedChatter{c, &modelNS}, nil, nil, timedExecutor{ex, &execNS})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// warm the judge's bytecode and the pool
	if _, err := harness.Judge(ctx, ex, benchProblem(0), "def add_0(a, b):\n    return a + b", harness.Options{}); err != nil {
		b.Fatal(err)
	}
	modelNS.Store(0)
	execNS.Store(0)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		task, err := s.TaskFromProblem(benchProblem(i))
		if err != nil {
			b.Fatal(err)
		}
		r, err := s.Run(ctx, task)
		if err != nil || !r.Passed || len(execTurns(r.Dialogue)) != 3 {
			b.Fatalf("dialogue %d: err %v passed %v", i, err, r.Passed)
		}
	}
	wall := time.Since(start)
	b.StopTimer()
	over := (wall - time.Duration(modelNS.Load()) - time.Duration(execNS.Load())) / time.Duration(b.N)
	b.ReportMetric(float64(over.Microseconds())/1000, "overhead-ms/dialogue")
	b.ReportMetric(float64(time.Duration(modelNS.Load()).Microseconds())/1000/float64(b.N), "model-ms/dialogue")
	b.ReportMetric(float64(time.Duration(execNS.Load()).Microseconds())/1000/float64(b.N), "sandbox-ms/dialogue")
}

// BenchmarkThroughput runs three-iteration dialogues at concurrency 32
// against a fake model with 200 ms latency and compares the rate with the
// lower of two bounds measured in the same run: the model bound
// (concurrency / latency / model calls per dialogue) and the sandbox bound
// (the executor's measured test runs per second / runs per dialogue).
func BenchmarkThroughput(b *testing.B) {
	const (
		concurrency = 32
		latency     = 200 * time.Millisecond
		perDialogue = 3 // model calls and sandbox runs
		dialogues   = 96
	)
	ex := sandbox(b, "")
	_, c := fake(b, threeIterations, nil, llmtest.WithLatency(latency), llmtest.WithoutRecording())
	s, err := New(Options{FeedbackRounds: 0}, c, nil, nil, ex)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()

	// sandbox bound: the same judge runs (wrong, wrong, right) back to back
	// at the same concurrency, no model.
	sandboxRate := func() float64 {
		const runs = 3 * 32
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(concurrency)
		start := time.Now()
		for i := range runs {
			g.Go(func() error {
				p := benchProblem(100000 + i)
				op := []string{"-", "*", "+"}[i%3]
				_, err := harness.Judge(gctx, ex, p, "def "+p.Query.ID+"(a, b):\n    return a "+op+" b", harness.Options{})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		return runs / time.Since(start).Seconds()
	}
	sandboxRate() // warm-up: pool instances and judge bytecode

	var got, runsPerS []float64
	for n := range b.N {
		before := sandboxRate()
		var mu sync.Mutex
		failed := 0
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(concurrency)
		start := time.Now()
		for i := range dialogues {
			g.Go(func() error {
				task, err := s.TaskFromProblem(benchProblem(n*dialogues + i))
				if err != nil {
					return err
				}
				r, err := s.Run(gctx, task)
				if err != nil {
					return err
				}
				if !r.Passed || len(execTurns(r.Dialogue)) != perDialogue {
					mu.Lock()
					failed++
					mu.Unlock()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			b.Fatal(err)
		}
		rate := dialogues / time.Since(start).Seconds()
		after := sandboxRate()
		if failed > 0 {
			b.Fatalf("%d dialogues did not take exactly %d passing iterations", failed, perDialogue)
		}
		got = append(got, rate)
		runsPerS = append(runsPerS, (before+after)/2)
	}
	rate, runs := mean(got), mean(runsPerS)
	modelBound := concurrency / latency.Seconds() / perDialogue
	sandboxBound := runs / perDialogue
	bound, which := modelBound, "model"
	if sandboxBound < modelBound {
		bound, which = sandboxBound, "sandbox"
	}
	b.ReportMetric(rate, "dialogues/s")
	b.ReportMetric(modelBound, "model-bound/s")
	b.ReportMetric(sandboxBound, "sandbox-bound/s")
	b.ReportMetric(runs, "sandbox-runs/s")
	b.ReportMetric(rate/bound, "ratio-to-bound")
	b.Logf("%.1f dialogues/s; model bound %.1f/s, sandbox bound %.1f/s (%.1f runs/s / %d); the %s bound held; ratio %.2f",
		rate, modelBound, sandboxBound, runs, perDialogue, which, rate/bound)
}

func mean(xs []float64) float64 {
	t := 0.0
	for _, x := range xs {
		t += x
	}
	return t / float64(len(xs))
}
