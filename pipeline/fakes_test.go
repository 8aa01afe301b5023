package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/schema"
)

// calls counts Each/All invocations per stage instance name.
var calls sync.Map // name -> *atomic.Int64

func callCount(name string) int64 {
	v, _ := calls.LoadOrStore(name, new(atomic.Int64))
	return v.(*atomic.Int64).Load()
}

func countCall(name string) {
	v, _ := calls.LoadOrStore(name, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
}

func resetCalls() { calls.Clear() }

type fakeOptions struct {
	Prompt  string        `yaml:"prompt" json:"prompt"`
	Sleep   time.Duration `yaml:"sleep" json:"sleep"`
	FailIDs []string      `yaml:"fail_ids" json:"fail_ids"`
	// Transient makes failures transient; FailTimes bounds how many times
	// each failing id fails (0 = always).
	Transient bool `yaml:"transient" json:"transient"`
	FailTimes int  `yaml:"fail_times" json:"fail_times"`
	// Cost is charged per call as model usage (USD).
	Cost float64 `yaml:"cost" json:"cost"`
	// Parallel only changes parallelism: it is not part of the cache key.
	Parallel int `yaml:"parallel" json:"parallel" key:"-"`
	// Nested holds a keyed and an unkeyed setting one level down.
	Nested struct {
		Keep int `yaml:"keep" json:"keep"`
		Skip int `yaml:"skip" json:"skip" key:"-"`
	} `yaml:"nested" json:"nested"`
}

func (o fakeOptions) Validate() error {
	if o.Sleep < 0 {
		return errors.New("sleep must not be negative")
	}
	return nil
}

// failures remembers per-id failure counts of t-suffix (across runs in one
// test process).
var failures sync.Map

func init() {
	// t-suffix appends the prompt to each query's text.
	Register("t-suffix", fakeOptions{Prompt: "!"}, func(o fakeOptions, svc *Services) (*testEach, error) {
		return &testEach{
			version: map[string]string{"prompt": o.Prompt},
			each: func(ctx context.Context, in Item) ([]Item, error) {
				countCall(svc.Name)
				if o.Cost > 0 {
					svc.Stats.AddUsage(Usage{Requests: 1, PromptTokens: 10, CostUSD: o.Cost})
				}
				if o.Sleep > 0 {
					select {
					case <-time.After(o.Sleep):
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				}
				for _, id := range o.FailIDs {
					if id == in.ID {
						v, _ := failures.LoadOrStore(svc.Name+"/"+id, new(atomic.Int64))
						if n := v.(*atomic.Int64).Add(1); o.FailTimes == 0 || n <= int64(o.FailTimes) {
							err := fmt.Errorf("fake failure of %s", id)
							if o.Transient {
								return nil, Transient(err)
							}
							return nil, err
						}
					}
				}
				q, err := As[schema.Query](in, KindQuery)
				if err != nil {
					return nil, Permanent(err)
				}
				q.Text += o.Prompt
				svc.Stats.Add("chars", float64(len(q.Text)))
				out, err := QueryItem(q)
				return []Item{out}, err
			},
			observe: func(out Item) { svc.Stats.Add("observed", 1) },
			estimate: func(in []Shape) (Usage, []Shape) {
				n := len(in)
				return Usage{Requests: int64(n), PromptTokens: int64(10 * n)}, in
			},
		}, nil
	})
	// t-pass passes every item on unchanged (counting it in the item's
	// statistics), except that an item whose id is in fail_ids also gets a
	// copy with id ID-copy: that item's output is not its input alone.
	Register("t-pass", fakeOptions{}, func(o fakeOptions, svc *Services) (*testEach, error) {
		return &testEach{
			version: map[string]string{"prompt": o.Prompt},
			each: func(ctx context.Context, in Item) ([]Item, error) {
				countCall(svc.Name)
				ItemStats(ctx, svc.Stats).Add("passed", 1)
				for _, id := range o.FailIDs {
					if id == in.ID {
						cp := in
						cp.ID += "-copy"
						return []Item{in, cp}, nil
					}
				}
				return []Item{in}, nil
			},
		}, nil
	})
	// t-count is a whole-set stage emitting one item with the input count.
	Register("t-count", fakeOptions{}, func(o fakeOptions, svc *Services) (*testAll, error) {
		return &testAll{
			version: o.Prompt,
			all: func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
				countCall(svc.Name)
				n := 0
				for _, err := range in {
					if err != nil {
						return err
					}
					n++
				}
				svc.Stats.Set("counted", float64(n)) // a whole-set figure no item carries
				it, err := QueryItem(schema.Query{ID: "count", Text: fmt.Sprint(n)})
				if err != nil {
					return err
				}
				return emit(it)
			},
		}, nil
	})
}

// testEach is a per-item test stage made of functions; nil ones do nothing.
type testEach struct {
	version  any
	each     func(ctx context.Context, in Item) ([]Item, error)
	observe  func(out Item)
	estimate func([]Shape) (Usage, []Shape)
	uses     bool
}

func (t *testEach) Version() any                                      { return t.version }
func (t *testEach) Each(ctx context.Context, in Item) ([]Item, error) { return t.each(ctx, in) }
func (t *testEach) UsesExecutor() bool                                { return t.uses }
func (t *testEach) Observe(out Item) {
	if t.observe != nil {
		t.observe(out)
	}
}
func (t *testEach) Estimate(in []Shape) (Usage, []Shape) {
	if t.estimate != nil {
		return t.estimate(in)
	}
	return Usage{}, in
}

// testAll is a whole-set test stage made of functions.
type testAll struct {
	version any
	all     func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error
}

func (t *testAll) Version() any { return t.version }
func (t *testAll) All(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
	return t.all(ctx, in, emit)
}

// writeQueries writes n queries q0..q(n-1) as a queries JSONL file.
func writeQueries(t testing.TB, path string, from, n int) {
	t.Helper()
	var b strings.Builder
	for i := from; i < from+n; i++ {
		fmt.Fprintf(&b, `{"id":"q%d","text":"query number %d"}`+"\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// setup writes a pipeline file and n queries into a temp dir.
func setup(t testing.TB, n int, pipelineYAML string) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, n)
	file = filepath.Join(dir, "p.yaml")
	writePipeline(t, file, dir, pipelineYAML)
	return dir, file
}

func writePipeline(t testing.TB, file, dir, y string) {
	t.Helper()
	y = strings.ReplaceAll(y, "$DIR", dir)
	if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mustLoad loads a pipeline file or fails the test.
func mustLoad(t testing.TB, file string) *Config {
	t.Helper()
	cfg, err := Load(file, "")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return cfg
}

func mustRun(t testing.TB, file string, o RunOptions) *Manifest {
	t.Helper()
	cfg := mustLoad(t, file)
	m, err := Run(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return m
}

func stageRec(t testing.TB, m *Manifest, name string) StageRecord {
	t.Helper()
	for _, s := range m.Stages {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no stage %s in manifest", name)
	return StageRecord{}
}

// onQueries is a pipeline file over the queries setup writes (q.jsonl,
// native), run in $DIR/run; stages is the rest of the file from the stage
// list on, starting on a new line.
func onQueries(stages string) string {
	return "run_dir: $DIR/run\ninputs: [{path: q.jsonl, format: native}]\nstages:" + stages
}
