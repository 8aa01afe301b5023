package pipeline

import (
	"context"
	"net/url"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
)

// keyPipeline runs t-suffix with settings SETTINGS and, when EXEC is set, a
// code-running stage t-exec under executor EXEC.
const keyPipeline = `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
executor: tfake://?image=a
defaults: {concurrency: 2}
stages:
  - {stage: t-suffix, name: s, settings: {prompt: "!"}}
  - {stage: t-exec, name: x}
outputs:
  - path: $DIR/out.jsonl
`

func init() {
	// tfake is a sandbox driver whose identity is its URL's query: enough
	// to see which identity a stage key took.
	executors.Register("tfake", func(ctx context.Context, u *url.URL) (executors.Executor, error) {
		return fakeExecutor{executors.Info{Driver: "tfake", Image: u.RawQuery}}, nil
	})
	// t-exec says it runs code in the sandbox (and passes items through).
	Register("t-exec", fakeOptions{}, func(o fakeOptions, svc *Services) (*testEach, error) {
		return &testEach{uses: true, each: func(ctx context.Context, in Item) ([]Item, error) {
			countCall(svc.Name)
			if _, err := svc.Executor(ctx); err != nil {
				return nil, err
			}
			return []Item{in}, nil
		}}, nil
	})
}

type fakeExecutor struct{ info executors.Info }

func (f fakeExecutor) Run(ctx context.Context, req executors.Request) (executors.Result, error) {
	return executors.Result{}, nil
}
func (f fakeExecutor) Open(ctx context.Context, lang executors.Language, opts executors.SessionOptions) (executors.Session, error) {
	return nil, nil
}
func (f fakeExecutor) Info() executors.Info { return f.info }
func (f fakeExecutor) Close() error         { return nil }

// TestCacheKeyRules: settings tagged `key:"-"` (parallelism) never
// recompute a stage; the executor's identity recomputes exactly the stages
// that run code.
func TestCacheKeyRules(t *testing.T) {
	dir, file := setup(t, 20, keyPipeline)
	resetCalls()
	mustRun(t, file, RunOptions{})
	if callCount("s") != 20 || callCount("x") != 20 {
		t.Fatalf("first run: calls s=%d x=%d, want 20 each", callCount("s"), callCount("x"))
	}
	type step struct {
		name             string
		suffix, executor string
		wantS, wantX     int64 // calls added
	}
	for _, st := range []step{
		{"unkeyed setting", `{prompt: "!", parallel: 7}`, "tfake://?image=a", 0, 0},
		{"unkeyed nested setting", `{prompt: "!", parallel: 3, nested: {skip: 4}}`, "tfake://?image=a", 0, 0},
		// x's input is unchanged by s's new key, so x is not recomputed.
		{"keyed nested setting", `{prompt: "!", nested: {keep: 1}}`, "tfake://?image=a", 20, 0},
		{"image", `{prompt: "!", nested: {keep: 1}}`, "tfake://?image=b", 0, 20},
		{"limit", `{prompt: "!", nested: {keep: 1}}`, "tfake://?image=b&memory=1GiB", 0, 20},
		{"back to the first", `{prompt: "!"}`, "tfake://?image=a", 0, 0},
	} {
		y := `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
executor: ` + st.executor + `
defaults: {concurrency: 2}
stages:
  - {stage: t-suffix, name: s, settings: ` + st.suffix + `}
  - {stage: t-exec, name: x}
outputs:
  - path: $DIR/out.jsonl
`
		writePipeline(t, file, dir, y)
		s0, x0 := callCount("s"), callCount("x")
		m := mustRun(t, file, RunOptions{})
		if got := callCount("s") - s0; got != st.wantS {
			t.Errorf("%s: stage s computed %d items, want %d (status %s)", st.name, got, st.wantS, stageRec(t, m, "s").Status)
		}
		if got := callCount("x") - x0; got != st.wantX {
			t.Errorf("%s: stage x computed %d items, want %d (status %s)", st.name, got, st.wantX, stageRec(t, m, "x").Status)
		}
	}
}
