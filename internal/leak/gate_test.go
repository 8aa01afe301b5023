package leak

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// TestGateLosesNothing audits the sweeps' and labelled sets' inputs with
// and without the statement gate (gate.go) and wants the same findings:
// the gate may only pass over messages the statement and literal
// measures find nothing in.
func TestGateLosesNothing(t *testing.T) {
	gated, ungated := testAuditor(t, Options{}), testAuditor(t, Options{ungated: true})
	if gated.gate == nil || ungated.gate != nil {
		t.Fatal("the gated auditor has no gate, or the ungated one has one")
	}
	sameReports(t, auditSets(t, false), ungated, gated)
}

// TestMemoChangesNothing audits the same inputs with and without the
// workers' message memo (memo.go) and wants the same reports. Each set is
// audited twice as it is, then with each dialogue joined to the next,
// then as it is again: a message is kept on its third sighting, as the
// second half of a joined dialogue, and replayed as the first half of the
// next one and in the last pass, at other positions than where it was
// kept.
func TestMemoChangesNothing(t *testing.T) {
	sameReports(t, auditSets(t, true), testAuditor(t, Options{unmemoized: true}), testAuditor(t, Options{}))
}

// auditSets are the inputs of the sweeps and labelled sets, by name, and
// 3,000 synthetic dialogues; with recur, each set but the synthetic one
// is given twice, then its dialogues joined in pairs, then itself again.
func auditSets(t *testing.T, recur bool) map[string][]schema.Dialogue {
	he, mb := testHumanEval(t), testMBPP(t)
	all := append(append([]schema.Problem(nil), he...), mb...)
	two := func(id, user, assistant string) schema.Dialogue {
		return schema.Dialogue{ID: id, Messages: []schema.Message{{Role: schema.RoleUser, Content: user}, {Role: schema.RoleAssistant, Content: assistant}}}
	}
	sets := map[string][]schema.Dialogue{}
	// The whole-benchmark sweeps: every solution as it is, and disguised
	// in each way of variantKinds.
	for _, p := range all {
		code := solutionCode(&p)
		sets["solutions"] = append(sets["solutions"], two(p.ID, "Can you explain what this does?", "Here it is:\n"+code+"\nIt works."))
		sets["solutions asked"] = append(sets["solutions asked"], two(p.ID, p.Text+"\n```python\n"+code+"\n```", "Sure."))
	}
	vs := transformVariants(t, all)
	for _, k := range variantKinds {
		for _, p := range all {
			if code := vs[p.ID][k.name]; code != nil {
				sets[k.name] = append(sets[k.name], two(p.ID, "Can you explain what this does?",
					"Here it is:\n\n```python\n"+strings.TrimRight(*code, "\n")+"\n```\n\nIt walks the input once."))
			}
		}
	}
	leaks, _, clean := plantedSet(t)
	sets["planted"] = append(leaks, clean...)
	sets["hard negatives"] = hardNegatives(t)
	_, evol, _ := evolSample(t)
	sets["evol-style"] = evol
	sets["code alpaca"] = testAlpacaDialogues(t)
	for name, ds := range sets {
		if !recur {
			break
		}
		joined := make([]schema.Dialogue, len(ds))
		for i, d := range ds {
			joined[i] = schema.Dialogue{ID: d.ID + "+", Messages: slices.Concat(d.Messages, ds[(i+1)%len(ds)].Messages)}
		}
		sets[name] = slices.Concat(ds, ds, joined, ds)
	}
	corpus, _ := syntheticCorpus(t, 3000)
	for d := range corpus {
		sets["synthetic"] = append(sets["synthetic"], *d)
	}
	return sets
}

// sameReports audits every set with want and with got and fails where
// the reports differ (settings aside).
func sameReports(t *testing.T, sets map[string][]schema.Dialogue, wantA, gotA *Auditor) {
	t.Helper()
	flagged := 0
	for name, ds := range sets {
		want, err := wantA.Run(context.Background(), Slice(ds), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := gotA.Run(context.Background(), Slice(ds), nil)
		if err != nil {
			t.Fatal(err)
		}
		got.Options, want.Options = Options{}, Options{}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: report differs: flagged %d, want %d; findings %d, want %d",
				name, got.Flagged, want.Flagged, len(got.Findings), len(want.Findings))
		}
		flagged += want.Flagged
		t.Logf("%s: %d dialogues, %d flagged either way", name, len(ds), want.Flagged)
	}
	if flagged == 0 {
		t.Fatal("nothing flagged: the comparison is empty")
	}
}

// TestGatePassesOver checks that the gate does pass over messages: on
// the synthetic benchmark corpus most messages share only light
// statements with the benchmarks.
func TestGatePassesOver(t *testing.T) {
	a := testAuditor(t, Options{})
	corpus, _ := syntheticCorpus(t, 500)
	var msgs, passed int
	for d := range corpus {
		for _, m := range d.Messages {
			toks := codeTokens(m.Content, nil)
			sts := codeStatements(m.Content, toks, nil)
			if len(sts) == 0 {
				continue
			}
			msgs++
			if !a.gate.statements(sts) && !a.gate.literals(toks, literalTokens(m.Content, toks, nil)) {
				passed++
			}
		}
	}
	t.Logf("passed over %d of %d messages with statements", passed, msgs)
	if passed*2 < msgs {
		t.Errorf("passed over %d of %d messages, want at least half", passed, msgs)
	}
}

// BenchmarkGate audits the same synthetic dialogues with the gated and
// the ungated auditor (the audit before the gate) on one goroutine,
// alternating in chunks of 100 dialogues so both see the same load, and
// reports the CPU seconds of each and their ratio (x_ungated_over_gated;
// above 1: the gate saves).
// Run: go test -run '^$' -bench Gate -benchtime 1x ./internal/leak/
func BenchmarkGate(b *testing.B) {
	gated, ungated := testAuditor(b, Options{}), testAuditor(b, Options{ungated: true})
	corpus, _ := syntheticCorpus(b, 6800)
	var ds []*schema.Dialogue
	for d := range corpus {
		ds = append(ds, d)
	}
	sg, su := newScratch(), newScratch()
	var cpuG, cpuU float64
	for range b.N {
		u, g := alternateCPU(b, len(ds),
			func(i int) { ungated.check(context.Background(), ds[i], i, su) },
			func(i int) { gated.check(context.Background(), ds[i], i, sg) })
		cpuU += u
		cpuG += g
	}
	b.ReportMetric(cpuG, "cpu_s_gated")
	b.ReportMetric(cpuU, "cpu_s_ungated")
	b.ReportMetric(cpuU/cpuG, "x_ungated_over_gated")
}

// TestMemoRecurrence measures how much of the synthetic benchmark corpus
// recurs (messages whose role and text an earlier dialogue had) and
// checks that the memo replays the messages met more than memoAdmit
// times: the benchmark's "full" pass owes its gain over "nomemo" to them.
func TestMemoRecurrence(t *testing.T) {
	a := testAuditor(t, Options{})
	corpus, _ := syntheticCorpus(t, 6800)
	s := newScratch()
	s.memo = newMsgMemo(2)
	count := map[memoKey]int{}
	var msgs, bytes, recurBytes, replayable int
	i := 0
	for d := range corpus {
		for _, m := range d.Messages {
			k := memoKey{role: m.Role, content: m.Content}
			count[k]++
			msgs++
			bytes += len(m.Content)
			if count[k] > 1 {
				recurBytes += len(m.Content)
			}
			if count[k] > memoAdmit && len(m.Content) >= minMemoBytes {
				replayable++
			}
		}
		a.check(context.Background(), d, i, s)
		i++
	}
	t.Logf("%d messages, %d distinct; %.1f%% of the text recurs; %d messages met more than %d times, %d replayed",
		msgs, len(count), 100*float64(recurBytes)/float64(bytes), replayable, memoAdmit, s.memo.replays)
	if s.memo.replays*10 < replayable*9 {
		t.Errorf("replayed %d messages, want at least 90%% of the %d met more than %d times", s.memo.replays, replayable, memoAdmit)
	}
	if s.memo.replays > replayable {
		t.Errorf("replayed %d messages, more than the %d met more than %d times", s.memo.replays, replayable, memoAdmit)
	}
}

// BenchmarkMemo audits 6,800 synthetic dialogues with and without the
// message memo on one goroutine, alternating in chunks of 100 dialogues
// so both see the same load, and reports the CPU seconds of each and
// their ratio (x_nomemo_over_memo; above 1: the memo saves), for the
// corpus as it is ("recurring": most messages recur) and with every
// message made unique by a numbered line at its end ("unique": the
// memo's overhead where nothing recurs).
// Run: go test -run '^$' -bench Memo -benchtime 1x ./internal/leak/
func BenchmarkMemo(b *testing.B) {
	a := testAuditor(b, Options{})
	corpus, _ := syntheticCorpus(b, 6800)
	var recurring, unique []*schema.Dialogue
	for d := range corpus {
		recurring = append(recurring, d)
		unique = append(unique, uniqueDialogue(d))
	}
	for _, c := range []struct {
		name string
		ds   []*schema.Dialogue
	}{{"recurring", recurring}, {"unique", unique}} {
		b.Run(c.name, func(b *testing.B) {
			plain, memo := newScratch(), newScratch()
			memo.memo = newMsgMemo(2)
			var cpuP, cpuM float64
			for range b.N {
				p, m := alternateCPU(b, len(c.ds),
					func(i int) { a.check(context.Background(), c.ds[i], i, plain) },
					func(i int) { a.check(context.Background(), c.ds[i], i, memo) })
				cpuP += p
				cpuM += m
			}
			b.ReportMetric(cpuM, "cpu_s_memo")
			b.ReportMetric(cpuP, "cpu_s_nomemo")
			b.ReportMetric(cpuP/cpuM, "x_nomemo_over_memo")
		})
	}
}

// alternateCPU runs before(i) and after(i) for i in [0, n), alternating in
// chunks of 100 so both see the same load, and returns the CPU seconds
// each took.
func alternateCPU(tb testing.TB, n int, before, after func(i int)) (cpuBefore, cpuAfter float64) {
	for i := 0; i < n; i += 100 {
		end := min(i+100, n)
		c0 := cpuSeconds(tb)
		for k := i; k < end; k++ {
			before(k)
		}
		c1 := cpuSeconds(tb)
		for k := i; k < end; k++ {
			after(k)
		}
		cpuBefore += c1 - c0
		cpuAfter += cpuSeconds(tb) - c1
	}
	return cpuBefore, cpuAfter
}

// TestMemoBounded checks a memo with a small limit against none, one
// dialogue at a time: it stays within its limit, sweeps, still replays,
// and every Result is the same.
func TestMemoBounded(t *testing.T) {
	a := testAuditor(t, Options{})
	corpus, _ := syntheticCorpus(t, 3000)
	plain, small := newScratch(), newScratch()
	small.memo = newMsgMemo(2)
	small.memo.limit = 400 << 10
	i := 0
	for d := range corpus {
		want := a.check(context.Background(), d, i, plain)
		got := a.check(context.Background(), d, i, small)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("dialogue %d: memo result differs: %d findings, want %d", i, len(got.Findings), len(want.Findings))
		}
		if small.memo.bytes > small.memo.limit {
			t.Fatalf("dialogue %d: memo holds %d bytes, over its limit %d", i, small.memo.bytes, small.memo.limit)
		}
		i++
	}
	t.Logf("%d replays, %d sweeps, %d bytes held", small.memo.replays, small.memo.sweeps, small.memo.bytes)
	if small.memo.sweeps == 0 || small.memo.replays == 0 {
		t.Errorf("%d sweeps, %d replays: want both", small.memo.sweeps, small.memo.replays)
	}
}
