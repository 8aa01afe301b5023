package leetcode

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// TestAlternativesPersonaRealData runs the alternatives mode over the
// LeetCodeDataset test file (the first 40 eligible problems;
// CODEFEEDBACK_LEETCODE_ALT_N=0 for all) with the scripted persona that
// knows each problem's reference solution, and reports what the gate
// accepted and rejected, by kind and reason. The persona plays the writer
// of simulate: it answers the optimal-solution and other-language requests
// as review feedback, with its Python code again and no complexity, so
// every dialogue must be rejected with a reason and the answer as detail.
func TestAlternativesPersonaRealData(t *testing.T) {
	ps := loadLeetCode(t, "leetcode/LeetCodeDataset-v0.2.0-test.jsonl.gz")
	ex := sandbox(t)
	n := 40
	if v, err := strconv.Atoi(os.Getenv("CODEFEEDBACK_LEETCODE_ALT_N")); err == nil {
		n = v
	}
	if n > 0 && n < len(ps) {
		ps = ps[:n]
	}
	persona := &llmtest.Persona{Solve: func(task string) (string, string, bool) {
		for _, p := range ps {
			if strings.Contains(task, strings.TrimSpace(p.Text)) {
				return ShownCode(p), "", true
			}
		}
		return "", "", false
	}}
	srv := llmtest.New(t, llmtest.WithoutRecording())
	srv.Script(persona.Script())
	chat, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "persona"}, MaxAttempts: 1, Concurrency: 8},
		llm.Options{HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions
	o.Modes = []string{ModeAlternatives}
	g := &Generator{Opts: o, Exec: ex, Embedder: embed.NewTFIDF(0), Chat: chat}
	out, err := g.Generate(context.Background(), ps)
	if err != nil {
		t.Fatal(err)
	}
	byKind := map[string]map[string]int{} // kind -> reason ("" accepted) -> dialogues
	for _, v := range out.AltVerdicts {
		if byKind[v.Kind] == nil {
			byKind[v.Kind] = map[string]int{}
		}
		byKind[v.Kind][v.Reason]++
		if os.Getenv("CODEFEEDBACK_LEETCODE_ALT_V") != "" && !v.OK() {
			t.Logf("rejected %s (%s) %s: %s", v.ID, v.Kind, v.Reason, v.Detail)
		}
		switch {
		case v.OK():
		case !slices.Contains([]string{RejectSame, RejectNoComplexity, RejectUnjudged, RejectLangFailed, RejectTestsFailed, RejectUnreadable}, v.Reason):
			t.Errorf("%s: reason %q is not one of the gate's reasons", v.ID, v.Reason)
		case strings.TrimSpace(v.Detail) == "":
			t.Errorf("%s: rejected (%s) without the rejected answer as detail", v.ID, v.Reason)
		}
	}
	t.Logf("%d eligible problems, %d reference failures; alternatives: %d accepted, %d rejected; by kind and reason (\"\" = accepted): %v",
		out.Eligible, len(out.ReferenceFailed), out.Alternatives, out.AltFailed, byKind)
	if got, want := len(out.AltVerdicts), out.Eligible-len(out.ReferenceFailed); got != want || out.Alternatives+out.AltFailed != got {
		t.Errorf("got %d verdicts (%d accepted + %d rejected), want one per problem whose reference passes (%d)", got, out.Alternatives, out.AltFailed, want)
	}
	// The persona states no complexity and answers every follow-up with
	// its Python code again: the gate must take none of it.
	if n := byKind[AltComplexity][""] + byKind[AltLanguages][""]; n != 0 {
		t.Errorf("the gate accepted %d alternatives dialogues of a persona that states no complexity and writes no other language", n)
	}
}
