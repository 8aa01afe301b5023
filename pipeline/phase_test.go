package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

func init() {
	// t-regroup is a whole-set stage that, like pack, makes new items out of
	// the whole set: pairs of neighbours in reverse order, with new ids.
	Register("t-regroup", fakeOptions{}, func(o fakeOptions, svc *Services) (*testAll, error) {
		return &testAll{
			version: "regroup-v1",
			all: func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
				countCall(svc.Name)
				var texts []string
				for it, err := range in {
					if err != nil {
						return err
					}
					q, err := As[schema.Query](it, KindQuery)
					if err != nil {
						return err
					}
					texts = append(texts, q.Text)
				}
				slices.Reverse(texts)
				for i := 0; i < len(texts); i += 2 {
					t := texts[i]
					if i+1 < len(texts) {
						t += " + " + texts[i+1]
					}
					it, err := QueryItem(schema.Query{ID: fmt.Sprintf("pair-%d", i/2), Text: t})
					if err != nil {
						return err
					}
					if err := emit(it); err != nil {
						return err
					}
				}
				return nil
			},
		}, nil
	})
}

var phasedYAML = onQueries(`
  - {stage: t-suffix, name: a, settings: {prompt: "!"}}
  - {stage: t-regroup, name: regroup}
  - {stage: t-suffix, name: b, settings: {prompt: "?"}}
  - {stage: t-suffix, name: c, settings: {prompt: "#"}}
  - {stage: t-suffix, name: d, input: [a], settings: {prompt: "%"}}
  - {stage: t-count, name: total, input: [c]}
outputs:
  - {path: $DIR/out/c.jsonl, format: jsonl, from: c}
  - {path: $DIR/out/d.jsonl, format: jsonl, from: d}
  - {path: $DIR/out/regroup.jsonl, format: jsonl, from: regroup}
  - {path: $DIR/out/total.jsonl, format: jsonl, from: total}
`)

func TestPlanSplitsAtWholeSetStages(t *testing.T) {
	_, file := setup(t, 1, phasedYAML)
	cfg := mustLoad(t, file)
	got := Plan(cfg)
	want := []Phase{
		{Index: 0, Each: []string{"a"}, All: []string{"regroup"}},
		{Index: 1, Each: []string{"b", "c", "d"}, All: []string{"total"}, Seeds: []string{"regroup", "a"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("plan got %+v want %+v", got, want)
	}
	// A pipeline that starts with a whole-set stage: phase 0 has no tasks.
	_, file = setup(t, 1, onQueries("\n  - {stage: t-regroup}\n  - {stage: t-suffix}\n"))
	cfg = mustLoad(t, file)
	want = []Phase{{Index: 0, All: []string{"t-regroup"}}, {Index: 1, Each: []string{"t-suffix"}, Seeds: []string{"t-regroup"}}}
	if got := Plan(cfg); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan got %+v want %+v", got, want)
	}
}

// runPhased runs every phase's n tasks and merge under root.
func runPhased(t *testing.T, cfg *Config, root string, n int) {
	t.Helper()
	for k, ph := range Plan(cfg) {
		if len(ph.Each) > 0 {
			for i := range n {
				if _, err := RunPhaseTask(context.Background(), cfg, root, k, Shard{i, n}, RunOptions{}); err != nil {
					t.Fatalf("phase %d task %d: %v", k, i, err)
				}
			}
		}
		if _, err := MergePhase(context.Background(), cfg, root, k, n, RunOptions{}); err != nil {
			t.Fatalf("merge phase %d: %v", k, err)
		}
	}
}

// TestPhasedRunEqualsUnsharded: every per-item stage (also those after the
// whole-set stage) runs in the tasks, each item once; the merges compute
// nothing per item; the published files are byte-identical to an
// unsharded run's; a resubmitted phase skips its completed tasks.
func TestPhasedRunEqualsUnsharded(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 31, phasedYAML)
	cfg := mustLoad(t, file)
	outs := []string{"c.jsonl", "d.jsonl", "regroup.jsonl", "total.jsonl"}
	if _, err := Run(context.Background(), cfg, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	whole := map[string][]byte{}
	for _, o := range outs {
		b, err := os.ReadFile(filepath.Join(dir, "out", o))
		if err != nil {
			t.Fatal(err)
		}
		whole[o] = b
	}
	if err := os.RemoveAll(filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	resetCalls()
	root := filepath.Join(dir, "phased")
	for k, ph := range Plan(cfg) {
		for i := range 3 {
			if _, err := RunPhaseTask(context.Background(), cfg, root, k, Shard{i, 3}, RunOptions{}); err != nil {
				t.Fatalf("phase %d task %d: %v", k, i, err)
			}
		}
		before := map[string]int64{}
		for _, s := range ph.Each {
			before[s] = callCount(s)
		}
		if k == 1 {
			// Resubmitted after task 1 was killed: the other tasks are
			// skipped; task 1 resumes from its store and calls nothing.
			os.Remove(filepath.Join(PhaseTaskDir(root, 1, Shard{1, 3}), "manifest.json"))
			var skipped []int
			for i := range 3 {
				r, err := RunPhaseTask(context.Background(), cfg, root, k, Shard{i, 3}, RunOptions{})
				if err != nil {
					t.Fatalf("resubmitted task %d: %v", i, err)
				}
				if r.Skipped {
					skipped = append(skipped, i)
				}
			}
			if !slices.Equal(skipped, []int{0, 2}) {
				t.Errorf("resubmitted phase skipped tasks %v, want [0 2]", skipped)
			}
			for _, s := range ph.Each {
				if got := callCount(s) - before[s]; got != 0 {
					t.Errorf("resubmitted phase called stage %s %d times, want 0 (its results are stored)", s, got)
				}
			}
		}
		m, err := MergePhase(context.Background(), cfg, root, k, 3, RunOptions{})
		if err != nil {
			t.Fatalf("merge phase %d: %v", k, err)
		}
		for _, s := range ph.Each {
			if got := callCount(s) - before[s]; got != 0 {
				t.Errorf("merge of phase %d called per-item stage %s %d times, want 0", k, s, got)
			}
			if rec := stageRec(t, m.Manifest, s); rec.Counts.Fresh != 0 || rec.Counts.Cached != rec.Counts.In {
				t.Errorf("merge of phase %d: stage %s counts %+v, want all cached", k, s, rec.Counts)
			}
		}
	}
	// Each per-item stage ran once per item, in the tasks: a and d (31
	// inputs; d reads a's output, handed over by merge 0), b and c (16
	// regrouped items), the same as unsharded.
	for s, want := range map[string]int64{"a": 31, "b": 16, "c": 16, "d": 31, "regroup": 1, "total": 1} {
		if got := callCount(s); got != want {
			t.Errorf("stage %s called %d times in the phased run, want %d", s, got, want)
		}
	}
	for _, o := range outs {
		got, err := os.ReadFile(filepath.Join(dir, "out", o))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, whole[o]) {
			t.Errorf("%s: phased run differs from unsharded:\ngot  %q\nwant %q", o, got, whole[o])
		}
	}
}

// TestMergePhaseRefusesMissingTask: a phase's merge refuses an incomplete
// set of tasks, naming the missing one, and merges nothing; the next phase
// cannot start before its merge.
func TestMergePhaseRefusesMissingTask(t *testing.T) {
	dir, file := setup(t, 12, phasedYAML)
	cfg := mustLoad(t, file)
	root := filepath.Join(dir, "phased")
	for _, i := range []int{0, 2} {
		if _, err := RunPhaseTask(context.Background(), cfg, root, 0, Shard{i, 3}, RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := MergePhase(context.Background(), cfg, root, 0, 3, RunOptions{})
	if !errors.Is(err, ErrBadShards) || !strings.Contains(err.Error(), "shard 1/3 missing") {
		t.Fatalf("merge with task 1 missing: %v, want ErrBadShards naming shard 1/3", err)
	}
	if _, err := os.Stat(PhaseMergedDir(root)); !os.IsNotExist(err) {
		t.Errorf("a refused merge created %s", PhaseMergedDir(root))
	}
	_, err = RunPhaseTask(context.Background(), cfg, root, 1, Shard{0, 3}, RunOptions{})
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "merge phase 0 first") {
		t.Fatalf("phase 1 before merge 0: %v, want ErrUsage saying to merge phase 0 first", err)
	}
	// A merge with a different --limit than the tasks is refused.
	if _, err := RunPhaseTask(context.Background(), cfg, root, 0, Shard{1, 3}, RunOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = MergePhase(context.Background(), cfg, root, 0, 3, RunOptions{Limit: 5})
	if !errors.Is(err, ErrBadShards) || !strings.Contains(err.Error(), "--limit 5") {
		t.Fatalf("merge with another --limit: %v, want ErrBadShards", err)
	}
	// The pipeline file changed after the tasks ran: their results are not
	// the stage's any more, and the merge says so instead of replaying them.
	writePipeline(t, file, dir, strings.Replace(phasedYAML, `prompt: "!"`, `prompt: "!!"`, 1))
	if cfg, err = Load(file, ""); err != nil {
		t.Fatal(err)
	}
	_, err = MergePhase(context.Background(), cfg, root, 0, 3, RunOptions{})
	if !errors.Is(err, ErrBadShards) || !strings.Contains(err.Error(), "stage a in ") || !strings.Contains(err.Error(), "other settings") {
		t.Fatalf("merge after the pipeline changed: %v, want ErrBadShards naming stage a", err)
	}
	_, err = MergePhase(context.Background(), cfg, root, 0, 3, RunOptions{Version: "other"})
	if !errors.Is(err, ErrBadShards) || !strings.Contains(err.Error(), "this is other") {
		t.Fatalf("merge by another version: %v, want ErrBadShards", err)
	}
}

// TestPhasedRunOneTask: a phase of one task is a shard set of one.
func TestPhasedRunOneTask(t *testing.T) {
	dir, file := setup(t, 7, phasedYAML)
	cfg := mustLoad(t, file)
	runPhased(t, cfg, filepath.Join(dir, "phased"), 1)
	b, err := os.ReadFile(filepath.Join(dir, "out", "total.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"text":"4"`) {
		t.Fatalf("total.jsonl %s: want a count of 4 regrouped items", b)
	}
}
