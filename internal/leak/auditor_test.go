package leak

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// benchmarks indexes HumanEval and MBPP from the shared data.
func testAuditor(t testing.TB, opts Options) *Auditor {
	t.Helper()
	a, err := New([]Benchmark{{Name: "humaneval", Problems: testHumanEval(t)}, {Name: "mbpp", Problems: testMBPP(t)}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// maxFalsePositives is the measured number of clean Code Alpaca dialogues
// flagged against HumanEval+MBPP with the default settings (see
// TestPlanted's log) that are not the flagged task (realCorpusLabels): the
// primes-in-a-range loop shaped like HumanEval/96's is no longer flagged
// (generic.py), nor the textbook bubble sorts with Mbpp/101's names
// (maxNameTasks).
const maxFalsePositives = 0

func TestPlanted(t *testing.T) {
	a := testAuditor(t, Options{})
	clean := testAlpacaDialogues(t)
	he, mb := testHumanEval(t), testMBPP(t)
	var planted []schema.Dialogue
	for i := 0; i < 20; i++ {
		planted = append(planted, plantHumanEval(he[i*8]))
		planted = append(planted, plantMBPP(mb[10+i*47]))
	}
	// Spread the planted dialogues through the clean ones.
	var corpus []schema.Dialogue
	step := len(clean) / len(planted)
	for i, d := range clean {
		corpus = append(corpus, d)
		if i%step == 0 && i/step < len(planted) {
			corpus = append(corpus, planted[i/step])
		}
	}
	byID := map[string][]schema.Finding{}
	rep, err := a.Run(context.Background(), Slice(corpus), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		byID[f.DialogueID] = append(byID[f.DialogueID], f)
	}
	lineOnly, gramOnly := 0, 0
	for _, d := range planted {
		fs := byID[d.ID]
		if len(fs) == 0 {
			t.Errorf("planted %s not flagged", d.ID)
			continue
		}
		want := strings.TrimPrefix(d.ID, "planted-")
		var lines, grams bool
		for _, f := range fs {
			if f.TaskID == want {
				lines = lines || f.Method == MethodLines
				grams = grams || f.Method == MethodNGram
			}
		}
		if !lines && !grams {
			t.Errorf("planted %s flagged only for other tasks: %+v", d.ID, fs)
		}
		if lines {
			lineOnly++
		}
		if grams {
			gramOnly++
		}
	}
	t.Logf("planted: %d/40 matched their task by lines, %d/40 by 13-grams", lineOnly, gramOnly)
	var fps []string
	for id := range byID {
		// The same Code Alpaca record, labelled in realCorpusLabels.
		if l, ok := realCorpusLabels["alpaca2k-"+strings.TrimPrefix(id, "alpaca-")]; ok && l.leak {
			continue
		}
		if strings.HasPrefix(id, "alpaca-") {
			fps = append(fps, id)
		}
	}
	sort.Strings(fps)
	for _, id := range fps {
		for _, f := range byID[id] {
			t.Logf("false positive %s: %s %s %s %.3g %s", id, f.Benchmark, f.TaskID, f.Method, f.Score, f.Evidence)
		}
	}
	t.Logf("false positives: %d of %d clean dialogues", len(fps), len(clean))
	if len(fps) > maxFalsePositives {
		t.Errorf("got %d false positives, want <= %d", len(fps), maxFalsePositives)
	}
	if rep.Flagged < len(fps)+len(planted) {
		t.Errorf("report flagged %d, want at least %d", rep.Flagged, len(fps)+len(planted))
	}
}

// asDialogue renders a problem as a dialogue holding all its code: the
// statement, then the solution and the tests in fenced blocks.
func asDialogue(p schema.Problem) schema.Dialogue {
	return schema.Dialogue{ID: "self-" + p.ID, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: p.Text},
		{Role: schema.RoleAssistant, Content: "```python\n" + taskSolution(&p) + "\n```\n\n```python\n" + strings.Join(p.Tests, "\n") + "\n```"},
	}}
}

func TestSelfAndUnrelated(t *testing.T) {
	a := testAuditor(t, Options{})
	var self []schema.Dialogue
	for _, p := range append(testHumanEval(t), testMBPP(t)...) {
		self = append(self, asDialogue(p))
	}
	rep, err := a.Run(context.Background(), Slice(self), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("self: ratio %.4f (%d/%d lines), humaneval %.4f, mbpp %.4f, flagged %d/%d",
		rep.LineRatio, rep.SharedLines, rep.CodeLines, rep.Benchmarks[0].LineRatio, rep.Benchmarks[1].LineRatio, rep.Flagged, rep.Dialogues)
	// Unfenced turns count too: statement lines that look like code
	// ("cost[][] and (m, n)") are code lines that no task shares.
	if rep.LineRatio < 0.98 {
		t.Errorf("self line ratio = %.4f, want >= 0.98", rep.LineRatio)
	}
	if rep.Flagged != len(self) {
		t.Errorf("self flagged %d, want all %d", rep.Flagged, len(self))
	}
	own := map[string]bool{}
	for _, f := range rep.Findings {
		if f.DialogueID == "self-"+f.TaskID && f.Method == MethodLines && f.Score >= 0.99 {
			own[f.DialogueID] = true
		}
	}
	if len(own) != len(self) {
		t.Errorf("%d of %d dialogues have line score ~1 against their own task, want all", len(own), len(self))
	}

	rep, err = a.Run(context.Background(), Slice(testAlpacaDialogues(t)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("code alpaca: ratio %.4f (%d/%d lines), humaneval %.4f, mbpp %.4f", rep.LineRatio, rep.SharedLines, rep.CodeLines,
		rep.Benchmarks[0].LineRatio, rep.Benchmarks[1].LineRatio)
	for _, b := range rep.Benchmarks {
		t.Logf("%s top shared lines: %v", b.Name, b.TopLines[:min(5, len(b.TopLines))])
	}
	if rep.LineRatio > 0.02 {
		t.Errorf("code alpaca line ratio = %.4f, want <= 0.02", rep.LineRatio)
	}
}

// TestVocabSkipsNoKey holds the word vocabulary (tokVocab) to what it
// promises: with it, the n-gram candidates of a dialogue (and its k-gram
// candidates) are those found with every window looked up (a vocabulary
// of all ones), on the synthetic dialogues and on every task's own text
// and code.
func TestVocabSkipsNoKey(t *testing.T) {
	a := testAuditor(t, Options{})
	all := *a
	for i := range all.gramVocab {
		all.gramVocab[i] = ^uint64(0)
	}
	corpus, _ := syntheticCorpusOf(t, 300, true)
	var ds []*schema.Dialogue
	for d := range corpus {
		ds = append(ds, d)
	}
	for _, p := range append(testHumanEval(t), testMBPP(t)...) {
		ds = append(ds, &schema.Dialogue{ID: p.ID, Messages: []schema.Message{
			{Role: schema.RoleUser, Content: p.Prompt + "\n" + p.Text},
			{Role: schema.RoleAssistant, Content: "```python\n" + p.Solution + "\n```\n" + strings.Join(p.Tests, "\n")},
		}})
	}
	s0, s1 := newScratch(), newScratch()
	kgrams, grams := 0, 0
	for i, d := range ds {
		r0 := all.check(t.Context(), d, i, s0)
		r1 := a.check(t.Context(), d, i, s1)
		for st := range nStreams {
			if !slices.Equal(s1.fpCand[st], s0.fpCand[st]) {
				t.Fatalf("%s: k-gram candidates (stream %d) with the vocabulary:\n got %v\nwant %v", d.ID, st, s1.fpCand[st], s0.fpCand[st])
			}
			kgrams += len(s0.fpCand[st])
		}
		if !slices.Equal(s1.gramCand, s0.gramCand) {
			t.Fatalf("%s: n-gram candidates with the vocabulary:\n got %v\nwant %v", d.ID, s1.gramCand, s0.gramCand)
		}
		grams += len(s0.gramCand)
		if len(r1.Findings) != len(r0.Findings) {
			t.Fatalf("%s: %d findings with the vocabulary, %d without", d.ID, len(r1.Findings), len(r0.Findings))
		}
	}
	if kgrams < 10000 || grams < 1000 {
		t.Errorf("compared %d k-gram and %d n-gram candidates, want at least 10,000 and 1,000", kgrams, grams)
	}
	t.Logf("%d dialogues: %d k-gram and %d n-gram candidates alike", len(ds), kgrams, grams)
}
