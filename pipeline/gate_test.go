package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// gatedOptions script a gated stage: item qN's answer is rejected when
// (N*37)%100 < RejectPercent: exact over every 100 items, spread evenly.
type gatedOptions struct {
	RejectPercent int     `yaml:"reject_percent" json:"reject_percent"`
	MaxRejected   float64 `yaml:"max_rejected" json:"max_rejected"`
	Bypass        bool    `yaml:"bypass" json:"bypass"`
}

type gatedStage struct {
	o   gatedOptions
	svc *Services
}

func (g *gatedStage) Version() any { return "gated-v1" }

func (g *gatedStage) Each(ctx context.Context, in Item) ([]Item, error) {
	countCall(g.svc.Name)
	n, _ := strconv.Atoi(strings.TrimPrefix(in.ID, "q"))
	st := ItemStats(ctx, g.svc.Stats)
	st.Add("gate/answer/checked", 1)
	if (n*37)%100 < g.o.RejectPercent { // spread evenly over each hundred
		// The round is dropped, the item goes on without it.
		st.Add("gate/answer/rejected", 1)
		st.Add("gate/answer/reason/garbage", 1)
		st.Reject("answer", "garbage", "the model said nonsense about "+in.ID)
	}
	return []Item{in}, nil
}

func (g *gatedStage) Gates() []GateRule {
	return []GateRule{{Gate: "answer", MaxShare: g.o.MaxRejected, Setting: "max_rejected"}}
}

// bypassingStage is a gatedStage that passes items on once tripped.
type bypassingStage struct{ gatedStage }

func (b *bypassingStage) Bypass(in Item) ([]Item, error) { return []Item{in}, nil }

func init() {
	Register("t-gated", gatedOptions{MaxRejected: 0.2}, func(o gatedOptions, svc *Services) (Stage, error) {
		if o.Bypass {
			return &bypassingStage{gatedStage{o, svc}}, nil
		}
		return &gatedStage{o, svc}, nil
	})
}

func gatedPipeline(percent int, bypass bool, minChecks int) string {
	return fmt.Sprintf(onQueries(`
  - stage: t-gated
    name: judge
    concurrency: 4
    gate_min_checks: %d
    settings: {reject_percent: %d, bypass: %v}
  - stage: t-suffix
    name: after
    settings: {prompt: "-after"}
  - stage: t-suffix
    name: independent
    input: [inputs]
    settings: {prompt: "-ind"}
outputs:
  - {path: $DIR/out.jsonl, from: after}
  - {path: $DIR/ind.jsonl, from: independent}
`), minChecks, percent, bypass)
}

// runGated runs the pipeline file, failing t unless a gate trips when trip
// says and the run succeeds otherwise; it returns the trip's error for its
// message.
func runGated(t *testing.T, file string, trip bool) (*Manifest, error) {
	t.Helper()
	m, err := Run(context.Background(), mustLoad(t, file), RunOptions{})
	if errors.Is(err, ErrGateTripped) != trip || (!trip && err != nil) {
		t.Fatalf("run error %v, want tripped %v", err, trip)
	}
	return m, err
}

func readRejections(t *testing.T, path string) []Rejection {
	t.Helper()
	rs, err := schema.ReadAll[Rejection](path, schema.AllowEmpty())
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func outLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestGateTripsEarlyAndQuarantines: a stage whose model misbehaves on 90%
// of its answers stops within its first 100 checks, quarantines what it
// rejected and what it did not process, and the stages after it and beside
// it still run and publish; the run ends with ErrGateTripped naming the
// setting and the quarantine.
func TestGateTripsEarlyAndQuarantines(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 1000, gatedPipeline(90, false, 50))
	m, err := runGated(t, file, true)
	for _, w := range []string{"stage judge", "gate answer", "max_rejected", filepath.Join(dir, "run", "quarantine.jsonl"), "garbage"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	calls := callCount("judge")
	if calls > 100 {
		t.Errorf("the tripped stage made %d calls, want at most 100", calls)
	}
	rec := stageRec(t, m, "judge")
	if rec.Status != "gate-tripped" || rec.Gate == nil || !rec.Gate.Early {
		t.Fatalf("judge record %+v, want status gate-tripped and an early trip", rec)
	}
	if rec.Gate.Checked > 100 || rec.Gate.Checked < 50 {
		t.Errorf("gate decided after %.0f checks, want 50..100", rec.Gate.Checked)
	}
	if rec.Counts.Skipped != 1000-calls {
		t.Errorf("skipped %d, want %d (1000 less the %d processed)", rec.Counts.Skipped, 1000-calls, calls)
	}
	q := readRejections(t, filepath.Join(dir, "run", "quarantine.jsonl"))
	reasons := map[string]int{}
	for _, r := range q {
		reasons[r.Reason]++
		if r.Stage != "judge" || r.ItemID == "" || r.Gate != "answer" || r.Setting != "max_rejected" {
			t.Fatalf("quarantine line %+v lacks stage, item, gate or setting", r)
		}
	}
	if int64(reasons["not_processed"]) != rec.Counts.Skipped || float64(reasons["garbage"]) != rec.Gate.Rejected {
		t.Errorf("quarantine reasons %v, want %d not_processed and %.0f garbage", reasons, rec.Counts.Skipped, rec.Gate.Rejected)
	}
	if m.QuarantineCount != int64(len(q)) || m.Status != "gate-tripped" || len(m.Gates) != 1 {
		t.Errorf("manifest quarantine %d (file %d), status %q, gates %v", m.QuarantineCount, len(q), m.Status, m.Gates)
	}
	// What passed (the processed items, their bad rounds dropped) goes on;
	// the independent stage publishes everything.
	if n := outLines(t, filepath.Join(dir, "out.jsonl")); int64(n) != calls {
		t.Errorf("published %d items after the tripped stage, want the %d it processed", n, calls)
	}
	if n := outLines(t, filepath.Join(dir, "ind.jsonl")); n != 1000 {
		t.Errorf("the independent stage published %d, want 1000", n)
	}

	// The next run tries again: the tripped stage is not taken as done; its
	// cached answers replay the gate, which trips again at once.
	resetCalls()
	m, _ = runGated(t, file, true)
	if s := stageRec(t, m, "judge"); s.Status != "gate-tripped" || s.Counts.Cached == 0 {
		t.Errorf("re-run judge %+v, want gate-tripped from the cache", s)
	}
	if c := callCount("judge"); c > 8 {
		t.Errorf("re-run made %d new calls, want at most the window (8)", c)
	}
}

// TestGateBypassPassesTheRestOn: a Bypasser's unprocessed items go on
// unchanged and uncached.
func TestGateBypassPassesTheRestOn(t *testing.T) {
	resetCalls()
	dir, file := setup(t, 400, gatedPipeline(90, true, 50))
	m, err := runGated(t, file, true)
	rec := stageRec(t, m, "judge")
	if !rec.Gate.Bypassed || rec.Counts.Skipped == 0 || rec.Counts.Out != 400 {
		t.Fatalf("judge %+v gate %+v, want bypassed items and 400 out", rec.Counts, rec.Gate)
	}
	if n := outLines(t, filepath.Join(dir, "out.jsonl")); n != 400 {
		t.Errorf("published %d, want 400", n)
	}
	if !strings.Contains(err.Error(), "passed on without this stage's work") {
		t.Errorf("error %q does not say the rest was passed on", err)
	}
}

// TestGateNeedsSampleAndClearExcess: 10% rejected never trips a 20% gate;
// 60% of 5 checks says too little; 30% of 1000 trips, but only at the end
// of a run whose minimum sample is the whole set.
func TestGateNeedsSampleAndClearExcess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		n, percent    int
		minChecks     int
		trip, early   bool
		maxCallsTrips int64
	}{
		{"10% of 500", 500, 10, 50, false, false, 0},
		{"60% of 5", 5, 60, 50, false, false, 0},
		{"23% of 300 is over but not clearly so until the end", 300, 23, 50, true, false, 0},
		{"30% of 1000 early", 1000, 30, 50, true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resetCalls()
			_, file := setup(t, tc.n, gatedPipeline(tc.percent, false, tc.minChecks))
			// q0..qN-1: make the share exact for small N by rejecting the
			// first percent of each hundred.
			m, _ := runGated(t, file, tc.trip)
			if rec := stageRec(t, m, "judge"); tc.trip && rec.Gate.Early != tc.early {
				t.Errorf("gate %+v, want early %v", rec.Gate, tc.early)
			}
		})
	}
}

// TestDeadLettersWrittenWhenAStageFails: a run that ends with a failed
// stage still writes the dead letters of the stages before it, and the
// manifest names the file.
func TestDeadLettersWrittenWhenAStageFails(t *testing.T) {
	resetCalls()
	failures.Clear()
	y := onQueries(`
  - stage: t-suffix
    name: flaky
    settings: {fail_ids: [q3]}
  - stage: t-broken-all
    name: broken
`)
	dir, file := setup(t, 10, y)
	cfg := mustLoad(t, file)
	m, err := Run(context.Background(), cfg, RunOptions{})
	if err == nil {
		t.Fatal("run passed with a failing stage")
	}
	path := filepath.Join(dir, "run", "dead-letters.jsonl")
	if m.DeadFile != path || m.DeadCount != 1 {
		t.Fatalf("manifest dead letters %q (%d), want %s (1)", m.DeadFile, m.DeadCount, path)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), `"item_id":"q3"`) {
		t.Fatalf("dead letters %q, %v", b, err)
	}
	saved, err := ReadManifest(filepath.Join(dir, "run"))
	if err != nil || saved.DeadFile != path {
		t.Fatalf("saved manifest dead file %q (%v)", saved.DeadFile, err)
	}
}

func init() {
	Register("t-broken-all", fakeOptions{}, func(o fakeOptions, svc *Services) (*testAll, error) {
		return &testAll{all: func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
			return errors.New("the whole-set stage broke")
		}}, nil
	})
}
