package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

const threeStages = `
run_dir: $DIR/run
inputs:
  - path: q.jsonl
    format: native
stages:
  - stage: t-suffix
    name: a
    settings: {prompt: "-a"}
  - stage: t-suffix
    name: b
    settings: {prompt: "-b"}
  - stage: t-suffix
    name: c
    settings: {prompt: "-c"}
outputs:
  - path: $DIR/out.jsonl
`

func TestIncrementalRerun(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 50, threeStages)
	m := mustRun(t, file, RunOptions{})
	for _, n := range []string{"a", "b", "c"} {
		if got := callCount(n); got != 50 {
			t.Fatalf("first run: stage %s calls got %d want 50", n, got)
		}
		if c := stageRec(t, m, n).Counts; c.Fresh != 50 || c.Out != 50 {
			t.Fatalf("first run: stage %s counts got %+v", n, c)
		}
	}
	out1, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if !strings.Contains(string(out1), `"text":"query number 7-a-b-c"`) {
		t.Fatalf("output lacks the chained text: %.200s", out1)
	}

	// Unchanged: zero calls.
	resetCalls()
	m = mustRun(t, file, RunOptions{})
	for _, n := range []string{"a", "b", "c"} {
		if got := callCount(n); got != 0 {
			t.Fatalf("unchanged re-run: stage %s calls got %d want 0", n, got)
		}
		if s := stageRec(t, m, n); s.Status != "unchanged" {
			t.Fatalf("unchanged re-run: stage %s status %q", n, s.Status)
		}
	}

	// Change b's prompt: a untouched, b and c recompute.
	resetCalls()
	writePipeline(t, file, dir, strings.Replace(threeStages, `"-b"`, `"-B"`, 1))
	mustRun(t, file, RunOptions{})
	want := map[string]int64{"a": 0, "b": 50, "c": 50}
	for n, w := range want {
		if got := callCount(n); got != w {
			t.Fatalf("prompt change: stage %s calls got %d want %d", n, got, w)
		}
	}
	// Change it back: everything comes from the store.
	resetCalls()
	writePipeline(t, file, dir, threeStages)
	m = mustRun(t, file, RunOptions{})
	for _, n := range []string{"a", "b", "c"} {
		if got := callCount(n); got != 0 {
			t.Fatalf("prompt restored: stage %s calls got %d want 0", n, got)
		}
	}
	if c := stageRec(t, m, "c").Counts; c.Cached != 50 {
		t.Fatalf("prompt restored: c cached got %d want 50", c.Cached)
	}
	out2, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if string(out1) != string(out2) {
		t.Fatalf("output after restoring the prompt differs from the first run")
	}

	// Add 10 queries: only those are computed.
	resetCalls()
	writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 60)
	mustRun(t, file, RunOptions{})
	for _, n := range []string{"a", "b", "c"} {
		if got := callCount(n); got != 10 {
			t.Fatalf("added items: stage %s calls got %d want 10", n, got)
		}
	}

	// --force b recomputes b; c's inputs are identical, so c is cached.
	resetCalls()
	m = mustRun(t, file, RunOptions{Force: []string{"b"}})
	want = map[string]int64{"a": 0, "b": 60, "c": 0}
	for n, w := range want {
		if got := callCount(n); got != w {
			t.Fatalf("--force b: stage %s calls got %d want %d", n, got, w)
		}
	}
	if st := stageRec(t, m, "a").Stats["observed"]; st != 60 {
		t.Fatalf("stats of an unchanged stage: observed got %v want 60", st)
	}
}

func TestOutputOrderIsInputOrder(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 200, strings.Replace(threeStages, `{prompt: "-a"}`, `{prompt: "-a", sleep: 1ms}`, 1))
	mustRun(t, file, RunOptions{})
	b, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 200 {
		t.Fatalf("got %d lines want 200", len(lines))
	}
	for i, l := range lines {
		if want := `"id":"q` + itoa(i) + `"`; !strings.Contains(l, want) {
			t.Fatalf("line %d: got %s want id q%d", i, l, i)
		}
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	s := ""
	for ; i > 0; i /= 10 {
		s = string(rune('0'+i%10)) + s
	}
	return s
}

func TestDeadLettersAndRetryNextRun(t *testing.T) {
	resetCalls()
	failures.Clear()
	y := onQueries(`
  - stage: t-suffix
    name: flaky
    retries: 2
    settings: {fail_ids: [q3, q5], transient: true, fail_times: 3}
  - stage: t-suffix
    name: broken
    settings: {fail_ids: [q7], fail_times: 1}
`)
	dir, file := setup(t, 10, y)
	m := mustRun(t, file, RunOptions{})
	// q3, q5 fail 3 times; 1 try + 2 retries = 3 attempts: dead-lettered.
	if c := stageRec(t, m, "flaky").Counts; c.Failed != 2 || c.Out != 8 || c.Retries != 4 {
		t.Fatalf("flaky counts got %+v want failed 2, out 8, retries 4", c)
	}
	if c := stageRec(t, m, "broken").Counts; c.Failed != 1 || c.Out != 7 {
		t.Fatalf("broken counts got %+v want failed 1, out 7", c)
	}
	dead, err := os.ReadFile(filepath.Join(dir, "run", "dead-letters.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{`"item_id":"q3"`, `"item_id":"q5"`, `"item_id":"q7"`} {
		if !strings.Contains(string(dead), id) {
			t.Fatalf("dead letters lack %s: %s", id, dead)
		}
	}
	if m.DeadCount != 3 {
		t.Fatalf("manifest dead_lettered got %d want 3", m.DeadCount)
	}
	// Next run: only the failed items are retried, and now they pass.
	resetCalls()
	m = mustRun(t, file, RunOptions{})
	if got := callCount("flaky"); got != 2 {
		t.Fatalf("retry run: flaky calls got %d want 2", got)
	}
	if got := callCount("broken"); got != 3 { // q3, q5 are new inputs; q7 retried
		t.Fatalf("retry run: broken calls got %d want 3", got)
	}
	if c := stageRec(t, m, "broken").Counts; c.Failed != 0 || c.Out != 10 {
		t.Fatalf("retry run: broken counts got %+v", c)
	}
}

func TestWholeSetStageAndSharding(t *testing.T) {
	resetCalls()
	y := onQueries(`
  - {stage: t-suffix, name: a}
  - {stage: t-count, name: count}
`)
	dir, file := setup(t, 100, y)
	cfg := mustLoad(t, file)
	var shardDirs []string
	total := int64(0)
	for i := range 3 {
		cfg.RunDir = filepath.Join(dir, "shard", itoa(i))
		shardDirs = append(shardDirs, cfg.RunDir)
		m, err := Run(context.Background(), cfg, RunOptions{Shard: Shard{i, 3}})
		if err != nil {
			t.Fatal(err)
		}
		if s := stageRec(t, m, "count"); s.Status != "waiting-for-merge" {
			t.Fatalf("shard %d: count status %q want waiting-for-merge", i, s.Status)
		}
		total += stageRec(t, m, "a").Counts.In
	}
	if total != 100 || callCount("a") != 100 {
		t.Fatalf("shards processed %d items with %d calls, want 100 and 100", total, callCount("a"))
	}
	merged := filepath.Join(dir, "merged")
	if _, err := Merge(context.Background(), merged, shardDirs); err != nil {
		t.Fatal(err)
	}
	resetCalls()
	cfg.RunDir = merged
	m, err := Run(context.Background(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if callCount("a") != 0 || callCount("count") != 1 {
		t.Fatalf("merged run: calls a=%d count=%d want 0 and 1", callCount("a"), callCount("count"))
	}
	if c := stageRec(t, m, "a").Counts; c.Cached != 100 {
		t.Fatalf("merged run: a cached %d want 100", c.Cached)
	}
	// Re-run: the whole-set stage is not called again, and the statistics
	// it computed over the set come back with its output.
	resetCalls()
	m, err = Run(context.Background(), cfg, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if callCount("count") != 0 {
		t.Fatalf("unchanged whole-set stage called %d times", callCount("count"))
	}
	if s := stageRec(t, m, "count"); s.Status != "unchanged" || s.Stats["counted"] != 100 {
		t.Fatalf("unchanged whole-set stage: status %q stats %v, want unchanged with counted=100", s.Status, s.Stats)
	}
}

func TestShardStable(t *testing.T) {
	for _, n := range []int{1, 2, 7} {
		seen := map[string]int{}
		for i := range n {
			s := Shard{i, n}
			for j := range 1000 {
				id := "q" + itoa(j)
				if s.Has(id) {
					seen[id]++
				}
			}
		}
		if len(seen) != 1000 {
			t.Fatalf("N=%d: %d ids covered want 1000", n, len(seen))
		}
		for id, c := range seen {
			if c != 1 {
				t.Fatalf("N=%d: %s in %d shards", n, id, c)
			}
		}
	}
	// Fixed assignments guard against an accidental change of the hash.
	got := []bool{Shard{0, 4}.Has("q1"), Shard{1, 4}.Has("q1"), Shard{2, 4}.Has("q1"), Shard{3, 4}.Has("q1")}
	again := []bool{Shard{0, 4}.Has("q1"), Shard{1, 4}.Has("q1"), Shard{2, 4}.Has("q1"), Shard{3, 4}.Has("q1")}
	for i := range got {
		if got[i] != again[i] {
			t.Fatalf("shard assignment not deterministic")
		}
	}
}

func TestShardFromEnv(t *testing.T) {
	cases := []struct {
		env  map[string]string
		flag int
		want Shard
		err  bool
	}{
		{map[string]string{}, 0, Shard{}, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "2", "CODEFEEDBACK_SHARDS": "4"}, 0, Shard{2, 4}, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "2"}, 5, Shard{2, 5}, false},
		{map[string]string{"JOB_COMPLETION_INDEX": "2"}, 0, Shard{}, true},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3", "SLURM_ARRAY_TASK_COUNT": "4", "SLURM_ARRAY_TASK_MIN": "1"}, 0, Shard{2, 4}, false},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "4", "SLURM_ARRAY_TASK_COUNT": "4"}, 0, Shard{}, true},
	}
	for i, c := range cases {
		got, err := ShardFromEnv(func(k string) string { return c.env[k] }, c.flag)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("case %d: got %v, %v want %v, err=%v", i, got, err, c.want, c.err)
		}
	}
}

func TestLockRefusesSecondRun(t *testing.T) {
	dir := t.TempDir()
	l, err := lockRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockRunDir(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "pid") {
		t.Fatalf("second lock: got %v want ErrLocked naming the holder", err)
	}
	l.unlock()
	l2, err := lockRunDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.unlock()
}

func TestDryRunChangesNothing(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 20, threeStages)
	mustRun(t, file, RunOptions{Limit: 5})
	resetCalls()
	m := mustRun(t, file, RunOptions{DryRun: true})
	if callCount("a") != 0 {
		t.Fatalf("dry-run called the stage")
	}
	a := stageRec(t, m, "a")
	if a.Counts.Cached != 5 || a.Counts.WouldRun != 15 || a.Estimate == nil || a.Estimate.Requests != 15 {
		t.Fatalf("dry-run a: counts %+v estimate %+v, want cached 5, would run 15, 15 requests", a.Counts, a.Estimate)
	}
	if b := stageRec(t, m, "b"); b.Counts.Cached != 5 {
		t.Fatalf("dry-run b: cached got %d want 5", b.Counts.Cached)
	}
	// The --limit run published out.limit-5.jsonl; the dry-run publishes nothing.
	out, _ := os.ReadFile(filepath.Join(dir, "out.limit-5.jsonl"))
	if n := strings.Count(string(out), "\n"); n != 5 {
		t.Fatalf("dry-run changed the output: %d lines want 5", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("dry-run wrote the full output: stat err %v, want not exist", err)
	}
}

// A stage after an uncached one is estimated from the shapes the first
// predicts, not skipped, and the run's estimate adds the stages up.
func TestDryRunEstimatesAfterUncachedStage(t *testing.T) {
	resetCalls()
	_, file := setup(t, 20, threeStages)
	mustRun(t, file, RunOptions{Limit: 5})
	m := mustRun(t, file, RunOptions{DryRun: true})
	want := map[string]struct {
		requests  int64
		predicted bool
	}{"a": {15, false}, "b": {20, true}, "c": {20, true}}
	var total int64
	for name, w := range want {
		e := stageRec(t, m, name).Estimate
		if e == nil || e.Requests != w.requests || e.Predicted != w.predicted {
			t.Errorf("stage %s: estimate %+v, want %d requests, predicted %v", name, e, w.requests, w.predicted)
			continue
		}
		total += e.Requests
	}
	if m.Estimate == nil || m.Estimate.Requests != total {
		t.Errorf("run estimate %+v, want the stages' %d requests", m.Estimate, total)
	}
}

func TestShapeOf(t *testing.T) {
	d := schema.Dialogue{ID: "d", Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Write f."},
		{Role: schema.RoleAssistant, Content: "Here:\n```python\nf()\n```"},
		{Role: schema.RoleExecution, Content: "ok"},
		{Role: schema.RoleUser, Content: "Add a docstring.", Feedback: &schema.Feedback{Category: "clarity"}},
		{Role: schema.RoleAssistant, Content: "Done:\n```python\nf()\n```"},
		{Role: schema.RoleUser, Content: "Now g."},
		{Role: schema.RoleAssistant, Content: "No code."},
	}}
	di, _ := DialogueItem(d)
	pi, _ := ProblemItem(schema.Problem{Query: schema.Query{ID: "p", Text: "abc"}, Tests: []string{"assert 1"}})
	qi, _ := QueryItem(schema.Query{ID: "q", Text: "hello"})
	for _, c := range []struct {
		it   Item
		want Shape
	}{
		{di, Shape{Kind: KindDialogue, Bytes: 8 + 23 + 2 + 16 + 23 + 6 + 8, UserTurns: 2, CodeTurns: 2}},
		{pi, Shape{Kind: KindProblem, Bytes: 3 + 8, Tested: true}},
		{qi, Shape{Kind: KindQuery, Bytes: 5}},
	} {
		if got := ShapeOf(c.it); got != c.want {
			t.Errorf("ShapeOf(%s) = %+v, want %+v", c.it.ID, got, c.want)
		}
	}
}

// paidPipeline is one stage charging $0.01 a call, one call at a time, so
// a budget stops it after a known number of calls.
var paidPipeline = onQueries(`
  - {stage: t-suffix, name: paid, concurrency: 1, settings: {cost: 0.01}}
outputs: [{path: $DIR/out.jsonl}]
`)

func TestMaxCostStopsAndResumes(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 100, paidPipeline)
	cfg := mustLoad(t, file)
	m, err := Run(context.Background(), cfg, RunOptions{MaxCost: 0.2})
	if !errors.Is(err, ErrStopped) || m.Status != "stopped" {
		t.Fatalf("got %v, status %q want ErrStopped", err, m.Status)
	}
	first := callCount("paid")
	if first < 20 || first > 22 {
		t.Fatalf("stopped after %d calls want about 20", first)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.jsonl")); err == nil {
		t.Fatalf("a stopped run published its output")
	}
	m = mustRun(t, file, RunOptions{})
	if got := callCount("paid"); got != 100 {
		t.Fatalf("after resume: %d calls in total want 100 (nothing paid twice)", got)
	}
	if u := stageRec(t, m, "paid").Usage; u.Requests != 100-first {
		t.Fatalf("resume usage: %d requests want %d", u.Requests, 100-first)
	}
}

func TestGCKeepsOnlyLatest(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 30, threeStages)
	mustRun(t, file, RunOptions{})
	writePipeline(t, file, dir, strings.Replace(threeStages, `"-c"`, `"-C"`, 1))
	mustRun(t, file, RunOptions{})
	before, err := StoreStats(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	if before.Buckets[0].Entries != 120 {
		t.Fatalf("entries before gc got %d want 120", before.Buckets[0].Entries)
	}
	rep, err := GC(filepath.Join(dir, "run"))
	if err != nil || rep.Deleted != 30 {
		t.Fatalf("gc deleted %d (%v) want the 30 results of the old prompt", rep.Deleted, err)
	}
	resetCalls()
	mustRun(t, file, RunOptions{Force: nil})
	if callCount("c") != 0 {
		t.Fatalf("gc removed results the latest run uses")
	}
	writePipeline(t, file, dir, threeStages)
	mustRun(t, file, RunOptions{})
	if callCount("c") != 30 {
		t.Fatalf("old prompt after gc: c calls %d want 30", callCount("c"))
	}
}
