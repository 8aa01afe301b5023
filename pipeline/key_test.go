package pipeline

import (
	"context"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/bwrap" // the sandbox whose identity enters keys
)

// keyPipeline runs t-suffix and a code-running stage t-exec under bwrap.
const keyPipeline = `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
executor: bwrap://?pool=1
defaults: {concurrency: 2}
stages:
  - {stage: t-suffix, name: s, settings: {prompt: "!"}}
  - {stage: t-exec, name: x}
outputs:
  - path: $DIR/out.jsonl
`

func init() {
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
		{"unkeyed setting", `{prompt: "!", parallel: 7}`, "bwrap://?pool=1", 0, 0},
		{"unkeyed nested setting", `{prompt: "!", parallel: 3, nested: {skip: 4}}`, "bwrap://?pool=1", 0, 0},
		// x's input is unchanged by s's new key, so x is not recomputed.
		{"keyed nested setting", `{prompt: "!", nested: {keep: 1}}`, "bwrap://?pool=1", 20, 0},
		{"pool size (not the sandbox's identity)", `{prompt: "!", nested: {keep: 1}}`, "bwrap://?pool=2", 0, 0},
		{"memory limit", `{prompt: "!", nested: {keep: 1}}`, "bwrap://?pool=1&memory=300MiB", 0, 20},
		{"timeout limit", `{prompt: "!", nested: {keep: 1}}`, "bwrap://?pool=1&memory=300MiB&timeout=7s", 0, 20},
		{"back to the first", `{prompt: "!"}`, "bwrap://?pool=1", 0, 0},
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
