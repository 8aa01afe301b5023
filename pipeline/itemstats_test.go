package pipeline

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/codefeedback/codefeedback/internal/store"
)

// dropFailures counts t-drop's transient failures per id (first attempt
// of every id ending in 5 fails after recording).
var dropFailures sync.Map

func init() {
	// t-drop keeps queries with an even number and drops the others,
	// counting what it drops only in its item statistics: nothing in the
	// outputs shows them.
	Register("t-drop", fakeOptions{}, func(o fakeOptions, svc *Services) (*testEach, error) {
		return &testEach{
			version: "drop-v1",
			each: func(ctx context.Context, in Item) ([]Item, error) {
				countCall(svc.Name)
				st := ItemStats(ctx, svc.Stats)
				n, err := strconv.Atoi(strings.TrimPrefix(in.ID, "q"))
				if err != nil {
					return nil, Permanent(err)
				}
				st.Add("seen", 1)
				if strings.HasSuffix(in.ID, "5") {
					v, _ := dropFailures.LoadOrStore(svc.Name+"/"+in.ID, new(atomic.Int64))
					if v.(*atomic.Int64).Add(1) == 1 {
						st.Add("doomed", 1) // dropped with the failed attempt
						return nil, Transient(fmt.Errorf("first attempt of %s fails", in.ID))
					}
				}
				st.Set("last/seen", float64(n))
				if n%2 == 1 {
					st.Add("dropped", 1)
					st.Add("dropped/chars", float64(len(in.Data)))
					return nil, nil
				}
				return []Item{in}, nil
			},
		}, nil
	})
}

const dropPipeline = `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
defaults: {concurrency: 4, retries: 2}
stages:
  - {stage: t-drop, name: drop}
  - {stage: t-suffix, name: after, settings: {prompt: "-x"}}
outputs:
  - path: $DIR/out.jsonl
`

// rerunFromCache makes the next run look the stage's items up in the store
// again instead of skipping it as unchanged.
func rerunFromCache(t *testing.T, dir, stage string) {
	t.Helper()
	if err := os.Remove(filepath.Join(dir, "run", "stages", stage, "done.json")); err != nil {
		t.Fatal(err)
	}
}

func TestItemStatsReplayedFromCache(t *testing.T) {
	resetCalls()
	dropFailures.Clear()
	dir, file := setup(t, 40, dropPipeline)
	first := stageRec(t, mustRun(t, file, RunOptions{}), "drop")
	want := map[string]float64{
		"seen":          40, // the failed first attempts of q5, q15, ... are not counted
		"dropped":       20,
		"dropped/chars": first.Stats["dropped/chars"],
		"last/seen":     39, // the last item in input order, whatever finished last
	}
	if !maps.Equal(first.Stats, want) || want["dropped/chars"] <= 0 {
		t.Fatalf("first run stats: got %v want %v with positive dropped/chars", first.Stats, want)
	}
	if first.Counts.Retries != 4 || first.Counts.Out != 20 {
		t.Fatalf("first run counts: got %+v want 4 retries and 20 outputs", first.Counts)
	}
	out1, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))

	for _, tc := range []struct {
		name   string
		prep   func()
		status string
	}{
		{"unchanged", func() {}, "unchanged"},
		{"from cache", func() { rerunFromCache(t, dir, "drop") }, "ran"},
	} {
		resetCalls()
		tc.prep()
		got := stageRec(t, mustRun(t, file, RunOptions{}), "drop")
		if calls := callCount("drop"); calls != 0 || got.Status != tc.status || got.Counts.Cached != 40 {
			t.Fatalf("%s: %d calls, status %q, counts %+v; want 0 calls, status %q, 40 cached", tc.name, calls, got.Status, got.Counts, tc.status)
		}
		if !maps.Equal(got.Stats, first.Stats) {
			t.Errorf("%s: stats got %v want %v (as computed fresh)", tc.name, got.Stats, first.Stats)
		}
	}
	out2, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if string(out1) != string(out2) {
		t.Errorf("output of the cached re-run differs from the first run")
	}

	// Half cached, half fresh adds up like a fresh run of everything.
	writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 60)
	mixed := stageRec(t, mustRun(t, file, RunOptions{}), "drop")
	_, file2 := setup(t, 60, dropPipeline)
	fresh := stageRec(t, mustRun(t, file2, RunOptions{}), "drop")
	if mixed.Counts.Cached != 40 || fresh.Counts.Cached != 0 {
		t.Fatalf("cached counts: mixed %d fresh %d, want 40 and 0", mixed.Counts.Cached, fresh.Counts.Cached)
	}
	if !maps.Equal(mixed.Stats, fresh.Stats) || fresh.Stats["dropped"] != 30 {
		t.Errorf("stats of 40 cached + 20 fresh items: got %v want %v with 30 dropped", mixed.Stats, fresh.Stats)
	}
}

// TestItemValuesWithoutStats: values stored before item statistics existed
// (item lines only) are served as before, contributing no statistics.
func TestItemValuesWithoutStats(t *testing.T) {
	resetCalls()
	dropFailures.Clear()
	dir, file := setup(t, 20, dropPipeline)
	mustRun(t, file, RunOptions{})
	out1, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))

	// Rewrite the stage's stored values in the old format.
	db, err := store.OpenBolt(filepath.Join(dir, "run", "store.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rewritten := 0
	for key, err := range readKeys(filepath.Join(dir, "run", "stages", "drop", keysFile)) {
		if err != nil {
			t.Fatal(err)
		}
		bucket := ItemsBucket
		v, ok, err := db.Get(ctx, bucket, key)
		if err != nil || !ok {
			t.Fatalf("get %s: ok %v err %v", key, ok, err)
		}
		items, delta := splitDelta(v[1:])
		if delta == nil {
			t.Fatalf("value %q has no statistics line", v)
		}
		old := append([]byte{valOK}, items...)
		if v[0] == valSame {
			old = []byte{valSame} // passed through: the line is the stage's input
		}
		if err := db.Put(ctx, bucket, key, old); err != nil {
			t.Fatal(err)
		}
		rewritten++
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if rewritten != 20 {
		t.Fatalf("rewrote %d values, want 20", rewritten)
	}

	rerunFromCache(t, dir, "drop")
	resetCalls()
	got := stageRec(t, mustRun(t, file, RunOptions{}), "drop")
	if calls := callCount("drop"); calls != 0 || got.Counts.Cached != 20 || got.Counts.Out != 10 {
		t.Fatalf("old values: %d calls, counts %+v; want 0 calls, 20 cached, 10 out", calls, got.Counts)
	}
	if len(got.Stats) != 0 {
		t.Errorf("old values: stats got %v want none", got.Stats)
	}
	out2, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if string(out1) != string(out2) {
		t.Errorf("output from old-format values differs from the first run")
	}
}

func TestSplitDelta(t *testing.T) {
	item := `{"id":"a","kind":"query","data":{"text":"#stats {}\n"}}` + "\n"
	stats := statsPrefix + `{"add":{"k":1}}` + "\n"
	for _, tc := range []struct {
		name, in, items, delta string
	}{
		{"empty", "", "", ""},
		{"one item", item, item, ""},
		{"two items", item + item, item + item, ""},
		{"stats only", stats, "", `{"add":{"k":1}}`},
		{"items and stats", item + item + stats, item + item, `{"add":{"k":1}}`},
	} {
		items, delta := splitDelta([]byte(tc.in))
		if string(items) != tc.items || string(delta) != tc.delta {
			t.Errorf("%s: got items %q delta %q, want %q and %q", tc.name, items, delta, tc.items, tc.delta)
		}
	}
}

// TestItemStatsOutsideEngine: a stage called directly records into the
// fallback, and a nil recorder ignores everything.
func TestItemStatsOutsideEngine(t *testing.T) {
	fb := NewStats()
	ItemStats(context.Background(), fb).Add("k", 2)
	ItemStats(context.Background(), nil).Add("k", 1)
	if v, _ := fb.Snapshot(); v["k"] != 2 {
		t.Fatalf("fallback k got %v want 2", v["k"])
	}
}
