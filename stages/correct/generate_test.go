package correct

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

// setReport is what the mutation path made of a problem set.
type setReport struct {
	problems  int
	skipped   []string
	perKind   map[mutate.Kind]int // problems with at least one kept mutant of the kind
	dialogues []schema.Dialogue
}

func (r setReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problems, %d skipped, %d dialogues; problems with a failing mutant per kind:", r.problems, len(r.skipped), len(r.dialogues))
	for _, k := range mutate.Kinds() {
		fmt.Fprintf(&b, " %s=%d", k, r.perKind[k])
	}
	return b.String()
}

// generateSet runs the mutation path over problems with a few workers, then
// re-runs every dialogue's execution turns with verifyDialogue.
func generateSet(t testing.TB, ex executors.Executor, problems []schema.Problem, workers int) setReport {
	t.Helper()
	g := newGenerator(ex, mutationOptions{Seed: 1})
	ctx := context.Background()
	outs := make([]outcome, len(problems))
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(workers)
	for i := range problems {
		eg.Go(func() error {
			o, err := g.Generate(ectx, &problems[i])
			if err != nil {
				return fmt.Errorf("%s: %w", problems[i].ID, err)
			}
			outs[i] = o
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		t.Fatal(err)
	}
	rep := setReport{problems: len(problems), perKind: map[mutate.Kind]int{}}
	for i, o := range outs {
		if o.Skipped != "" {
			rep.skipped = append(rep.skipped, problems[i].ID+": "+o.Skipped)
		}
		seen := map[mutate.Kind]bool{}
		for _, d := range o.Dialogues {
			seen[mutate.Kind(d.Labels["bug_kind"])] = true
		}
		for k := range seen {
			rep.perKind[k]++
		}
		for _, a := range o.Attempts {
			if a.Kept != (kindOf(a.Observed) == a.Kind) {
				t.Errorf("%s %s: kept=%v but observed %s for kind %s", problems[i].ID, a.Operator, a.Kept, a.Observed, a.Kind)
			}
		}
		rep.dialogues = append(rep.dialogues, o.Dialogues...)
	}
	// Every feedback turn must match a fresh re-run, and every fix must pass.
	var mu sync.Mutex
	var bad []string
	eg, ectx = errgroup.WithContext(ctx)
	eg.SetLimit(workers)
	for i := range rep.dialogues {
		eg.Go(func() error {
			if err := verifyDialogue(ectx, g.Checker, &rep.dialogues[i]); err != nil {
				mu.Lock()
				bad = append(bad, err.Error())
				mu.Unlock()
			}
			return nil
		})
	}
	eg.Wait()
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("verify: %s", b)
	}
	return rep
}

func checkDialogue(t *testing.T, d *schema.Dialogue, p *schema.Problem) {
	t.Helper()
	if err := d.Validate(); err != nil {
		t.Errorf("%s: %v", d.ID, err)
	}
	roles := []string{}
	for _, m := range d.Messages {
		roles = append(roles, m.Role)
	}
	want := "user assistant execution assistant execution assistant"
	if got := strings.Join(roles, " "); got != want {
		t.Fatalf("%s: roles %q, want %q", d.ID, got, want)
	}
	if d.Stage != "correct" || d.Method != "mutation" || len(d.Sources) != 1 || d.Sources[0] != p.ID {
		t.Errorf("%s: stage/method/sources %s/%s/%v, want correct/mutation/[%s]", d.ID, d.Stage, d.Method, d.Sources, p.ID)
	}
	for _, l := range []string{"mutation_op", "bug_kind", "observed"} {
		if d.Labels[l] == "" {
			t.Errorf("%s: label %s missing", d.ID, l)
		}
	}
	fix := normalizeNewlines(p.Solution)
	if !strings.Contains(d.Messages[3].Content, codeBlock(fix)) {
		t.Errorf("%s: fix turn does not hold the reference solution", d.ID)
	}
	if strings.Contains(d.Messages[1].Content, codeBlock(fix)) {
		t.Errorf("%s: buggy turn holds the reference solution", d.ID)
	}
	if d.Messages[2].Exec == nil || d.Messages[2].Exec.Passed == nil || *d.Messages[2].Exec.Passed {
		t.Errorf("%s: buggy run record missing or passing", d.ID)
	}
	// The feedback turn is the harness's report of the real run; exports
	// add the "Execution result:" header themselves.
	fb := d.Messages[2].Content
	if strings.HasPrefix(fb, "Execution result") || strings.TrimSpace(fb) == "" {
		t.Errorf("%s: feedback turn %q is empty or carries an execution header", d.ID, fb)
	}
	if obs := d.Labels["observed"]; kindOf(obs) != mutate.Logic && kindOf(obs) != mutate.Timeout && !strings.Contains(fb, obs) {
		t.Errorf("%s: feedback turn lacks the observed %s:\n%s", d.ID, obs, fb)
	}
}

func repoFile(t testing.TB, rel string) string {
	root, err := sharedtest.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, rel)
}

// TestGenerateSampleProblems runs the mutation path on the project's own
// sample problems: every kind must be produced, and every dialogue must
// hold up to a re-run.
func TestGenerateSampleProblems(t *testing.T) {
	ps, err := schema.LoadProblems(repoFile(t, "data/problems.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ex := sandbox(t)
	rep := generateSet(t, ex, ps, 2)
	t.Log(rep)
	if len(rep.skipped) > 0 {
		t.Errorf("skipped sample problems (their references must pass): %v", rep.skipped)
	}
	for _, k := range mutate.Kinds() {
		if rep.perKind[k] == 0 {
			t.Errorf("no sample problem yields a %s mutant", k)
		}
	}
	byID := map[string]*schema.Problem{}
	for i := range ps {
		byID[ps[i].ID] = &ps[i]
	}
	for i := range rep.dialogues {
		d := &rep.dialogues[i]
		checkDialogue(t, d, byID[d.Sources[0]])
	}

	// The same seed gives the same dialogues (ids and buggy code).
	g := newGenerator(ex, mutationOptions{Seed: 1})
	p := byID[rep.dialogues[0].Sources[0]]
	a, err := g.Generate(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for _, d := range rep.dialogues {
		if d.Sources[0] == p.ID {
			first = append(first, d.ID)
		}
	}
	var again []string
	for _, d := range a.Dialogues {
		again = append(again, d.ID)
	}
	if strings.Join(first, ",") != strings.Join(again, ",") {
		t.Errorf("ids changed between runs: %v then %v", first, again)
	}
}

func loadMBPP(t testing.TB, n int) []schema.Problem {
	ps, err := schema.LoadProblems(sharedtest.Path(t, "mbpp/mbpp.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 && n < len(ps) {
		ps = ps[:n]
	}
	return ps
}

// TestMBPP50 is the 50-problem version of the full MBPP check.
func TestMBPP50(t *testing.T) {
	ps := loadMBPP(t, 50)
	rep := generateSet(t, sandbox(t), ps, 2)
	t.Log(rep)
	for _, s := range rep.skipped {
		t.Logf("skipped %s", s)
	}
	// Every MBPP solution has a colon and a function body, so syntax and
	// name mutants bite nearly everywhere; the other kinds depend on the code.
	for _, k := range mutate.Kinds() {
		if rep.perKind[k] == 0 {
			t.Errorf("no problem of 50 yields a %s mutant", k)
		}
	}
	if ok := rep.problems - len(rep.skipped); rep.perKind[mutate.Syntax] < ok {
		t.Errorf("syntax mutants on %d problems, want all %d unskipped", rep.perKind[mutate.Syntax], ok)
	}
}

// TestMBPPFull runs the mutation path on all 974 MBPP problems. It takes
// several minutes, so it runs only with CODEFEEDBACK_CORRECT_FULL=1.
func TestMBPPFull(t *testing.T) {
	if os.Getenv("CODEFEEDBACK_CORRECT_FULL") == "" {
		t.Skip("set CODEFEEDBACK_CORRECT_FULL=1 to run the mutation path on all of MBPP")
	}
	ps := loadMBPP(t, 0)
	rep := generateSet(t, sandbox(t), ps, 2)
	t.Log(rep)
	for _, s := range rep.skipped {
		t.Logf("skipped %s", s)
	}
}

// TestMBPPSetupNeedsSolution covers MBPP problems whose test set-up builds
// trees from the Node class the solution defines (the set-up must run after
// the solution): their references pass and their mutants hold up to re-runs.
func TestMBPPSetupNeedsSolution(t *testing.T) {
	var ps []schema.Problem
	for _, p := range loadMBPP(t, 0) {
		if p.ID == "Mbpp/367" || p.ID == "Mbpp/927" {
			ps = append(ps, p)
		}
	}
	if len(ps) != 2 {
		t.Fatalf("found %d of Mbpp/367 and Mbpp/927", len(ps))
	}
	for _, p := range ps {
		if strings.TrimSpace(p.Setup) == "" || !strings.Contains(p.Setup, "Node(") {
			t.Fatalf("%s: set-up %q does not build Nodes; the test no longer covers the set-up order", p.ID, p.Setup)
		}
	}
	rep := generateSet(t, sandbox(t), ps, 2)
	t.Log(rep)
	if len(rep.skipped) > 0 {
		t.Errorf("skipped: %v", rep.skipped)
	}
	if rep.perKind[mutate.Syntax] != 2 || rep.perKind[mutate.Name] != 2 {
		t.Errorf("problems with syntax/name mutants %d/%d, want 2/2", rep.perKind[mutate.Syntax], rep.perKind[mutate.Name])
	}
}
