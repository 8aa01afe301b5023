package leak

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// leakRecipe is one planted leak of testdata/planted/leaks.jsonl: which
// task, how it leaks, and the user's words (for a paraphrase, the reworded
// statement). The benchmark's own text is read from the shared data at
// test time, so none of it is in the repository.
type leakRecipe struct {
	ID, Kind, Benchmark, Task, Ask string
}

func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// renameIdentifiers renames every user identifier of code consistently
// (function, parameters, variables), leaving keywords, builtins, attributes
// and string contents alone, as a person disguising a copy would.
func renameIdentifiers(code string) string {
	names := map[string]string{}
	var b strings.Builder
	last := 0
	for _, tk := range codeTokens(code, nil) {
		if tk.norm != hIdent {
			continue
		}
		w := code[tk.start:tk.end]
		n, ok := names[w]
		if !ok {
			n = fmt.Sprintf("item%d_%s", len(names), strings.ToLower(w[:1]))
			names[w] = n
		}
		b.WriteString(code[last:tk.start])
		b.WriteString(n)
		last = int(tk.end)
	}
	b.WriteString(code[last:])
	return b.String()
}

// reformat re-indents code to two spaces a level, adds a blank line after
// every block opener and a comment to every third line, and splits the
// longest line after its first ", ".
func reformat(code string) string {
	lines := strings.Split(strings.ReplaceAll(code, "\t", "    "), "\n")
	longest := 0
	for i, l := range lines {
		if len(l) > len(lines[longest]) {
			longest = i
		}
		_ = l
	}
	var out []string
	for i, l := range lines {
		trim := strings.TrimLeft(l, " ")
		ind := strings.Repeat(" ", (len(l)-len(trim))/2)
		nl := ind + trim
		if i == longest {
			if k := strings.Index(nl, ", "); k > 0 {
				nl = nl[:k+1] + "\n" + ind + "        " + nl[k+2:]
			}
		}
		if trim != "" && i%3 == 1 && !strings.HasSuffix(trim, "\\") && !strings.Contains(trim, `"""`) {
			nl += "  # step"
		}
		out = append(out, nl)
		if strings.HasSuffix(strings.TrimSpace(trim), ":") {
			out = append(out, "")
		}
	}
	return strings.Join(out, "\n")
}

// plantedDialogue renders a recipe against its real task.
func plantedDialogue(r leakRecipe, p schema.Problem) schema.Dialogue {
	user, assistant := r.Ask, ""
	fence := func(s string) string { return "```python\n" + strings.TrimRight(s, "\n") + "\n```" }
	switch r.Kind {
	case "verbatim":
		if p.Prompt != "" {
			user += "\n\n" + fence(p.Prompt)
			assistant = "Here is the complete function:\n\n" + fence(p.Prompt+p.Solution)
		} else {
			user += " " + p.Text
			assistant = "Here you go:\n\n" + fence(p.Solution)
		}
	case "renamed":
		user += "\n\n" + fence(renameIdentifiers(taskSolution(&p)))
		assistant = "The logic looks right to me; the loop covers every element once."
	case "paraphrase":
		assistant = "Let us think about the approach first: go through the input once, keep what the rule asks for, and return the result at the end."
	case "tests":
		tests := strings.Join(p.Tests, "\n")
		if p.Prompt != "" {
			user += "\n\n" + fence(tests)
		} else {
			user += "\n" + tests // MBPP asserts, pasted without a fence
		}
		assistant = "Those tests pin down the edge cases well. I would start from the simplest case."
	case "reformatted":
		src := p.Solution
		if p.Prompt != "" {
			src = p.Prompt + p.Solution
		}
		user += "\n\n" + fence(reformat(src))
		assistant = "Yes, that formatting is fine and the behaviour is unchanged."
	}
	return schema.Dialogue{ID: r.ID, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: user},
		{Role: schema.RoleAssistant, Content: assistant},
	}}
}

// plantedSet builds the 40 leaks and reads the 200 clean dialogues.
func plantedSet(t *testing.T) (leaks []schema.Dialogue, recipes map[string]leakRecipe, clean []schema.Dialogue) {
	he, mb := testHumanEval(t), testMBPP(t)
	byID := map[string]schema.Problem{}
	for _, p := range append(he, mb...) {
		byID[p.ID] = p
	}
	recipes = map[string]leakRecipe{}
	for _, r := range readJSONL[leakRecipe](t, "testdata/planted/leaks.jsonl") {
		p, ok := byID[r.Task]
		if !ok {
			t.Fatalf("recipe %s: no task %s", r.ID, r.Task)
		}
		recipes[r.ID] = r
		leaks = append(leaks, plantedDialogue(r, p))
	}
	clean = readJSONL[schema.Dialogue](t, "testdata/planted/clean.jsonl")
	if len(leaks) < 40 || len(clean) != 200 {
		t.Fatalf("planted corpus: %d leaks and %d clean dialogues, want >= 40 and 200", len(leaks), len(clean))
	}
	return leaks, recipes, clean
}

// sameTaskJudge scripts the loopback model as an oracle judge: "same" when
// the turn is a planted paraphrase and the statement is its task's.
func sameTaskJudge(t *testing.T, recipes map[string]leakRecipe) (*llmtest.Server, llm.Chatter) {
	tasks := append(testHumanEval(t), testMBPP(t)...)
	stmt := map[string]string{}
	for i := range tasks {
		stmt[tasks[i].ID] = statementText(&tasks[i])
	}
	want := map[string]string{} // paraphrase turn -> statement of its task
	for _, r := range recipes {
		if r.Kind == "paraphrase" {
			want[stripCode(r.Ask)] = stmt[r.Task]
		}
	}
	return oracleJudge(t, want)
}

// oracleJudge scripts the loopback model as a judge that knows the
// answers: "same" exactly when want maps the turn to the statement, a good
// judge's answer to the calibration pairs.
func oracleJudge(t *testing.T, want map[string]string) (*llmtest.Server, llm.Chatter) {
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		msg := c.LastUser()
		a := between(msg, "Request A (a benchmark problem):\n", "\n\nRequest B")
		b := between(msg, "Request B (a turn of a training dialogue):\n", "\n\nAnswer with")
		if v, ok := calibrationAnswer(a, b); ok {
			return llmtest.Reply{Text: v}
		}
		if s, ok := want[b]; ok && s == a {
			return llmtest.Reply{Text: "same\nBoth ask for the same computation."}
		}
		return llmtest.Reply{Text: "different\nThey ask for different things."}
	})
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake-chat"}, MaxAttempts: 1, Concurrency: 8},
		llm.Options{Cache: llmtest.NewMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, c
}

// calibrationAnswer is a good judge's answer to a calibration pair (ok
// false for other pairs).
func calibrationAnswer(statement, turn string) (string, bool) {
	for _, p := range CalibrationPairs() {
		if p.Statement == statement && p.Turn == turn {
			if p.Same {
				return "same\nThe same computation, reworded.", true
			}
			return "different\nAnother computation.", true
		}
	}
	return "", false
}

func between(s, from, to string) string {
	i := strings.Index(s, from)
	if i < 0 {
		return ""
	}
	s = s[i+len(from):]
	if j := strings.Index(s, to); j >= 0 {
		s = s[:j]
	}
	return s
}

// minParaphraseFound is the measured number of planted paraphrases whose
// task the built-in retriever (lexIndex) puts among the 5 candidates the
// judge sees: all of them (the dense TF-IDF it replaced found 6).
const minParaphraseFound = 8

// TestPlantedCorpus audits 40 planted leaks of five kinds among 200 clean
// dialogues written for this test: the four code kinds must be found
// against their own task without a model, the paraphrases with the scripted
// judge, and at most 1% of the clean dialogues may be flagged.
func TestPlantedCorpus(t *testing.T) {
	leaks, recipes, clean := plantedSet(t)
	corpus := append(append([]schema.Dialogue(nil), clean...), leaks...)
	run := func(t *testing.T, a *Auditor) (found map[string][]string, cleanFlagged []string) {
		rep, err := a.Run(context.Background(), Slice(corpus), nil)
		if err != nil {
			t.Fatal(err)
		}
		found = map[string][]string{}
		flagged := map[string]bool{}
		for _, f := range rep.Findings {
			if r, ok := recipes[f.DialogueID]; ok && r.Task == f.TaskID {
				found[f.DialogueID] = append(found[f.DialogueID], f.Method)
			}
			if _, ok := recipes[f.DialogueID]; !ok && !flagged[f.DialogueID] {
				flagged[f.DialogueID] = true
				cleanFlagged = append(cleanFlagged, fmt.Sprintf("%s (%s %s %s)", f.DialogueID, f.Method, f.TaskID, f.Evidence))
			}
		}
		return found, cleanFlagged
	}
	check := func(t *testing.T, found map[string][]string, cleanFlagged []string, kinds map[string]bool) {
		perKind := map[string]int{}
		for id, r := range recipes {
			if !kinds[r.Kind] {
				continue
			}
			if len(found[id]) > 0 {
				perKind[r.Kind]++
			} else {
				t.Errorf("%s (%s, %s) not found against its task", id, r.Kind, r.Task)
			}
		}
		t.Logf("found per kind: %v; clean flagged %d of %d: %v", perKind, len(cleanFlagged), len(clean), cleanFlagged)
		byMethod := map[string]map[string]int{}
		for id, r := range recipes {
			for _, m := range found[id] {
				if byMethod[r.Kind] == nil {
					byMethod[r.Kind] = map[string]int{}
				}
				byMethod[r.Kind][m]++
			}
		}
		t.Logf("findings against the true task by kind and method: %v", byMethod)
		// The code kinds are the fingerprints' job: each is found by them
		// alone (docstrings in between included), not only by lines or
		// statement n-grams.
		for kind := range kinds {
			if kind != "paraphrase" && byMethod[kind][MethodFingerprint] != perKind[kind] {
				t.Errorf("%s: %d of %d leaks found by fingerprints", kind, byMethod[kind][MethodFingerprint], perKind[kind])
			}
		}
		if len(cleanFlagged) > len(clean)/100 {
			t.Errorf("%d of %d clean dialogues flagged, want <= 1%%", len(cleanFlagged), len(clean))
		}
	}

	t.Run("model-free", func(t *testing.T) {
		found, cf := run(t, testAuditor(t, Options{}))
		check(t, found, cf, map[string]bool{"verbatim": true, "renamed": true, "tests": true, "reformatted": true})
		// Without a model the paraphrases are beyond the code measures.
		for id, r := range recipes {
			if r.Kind == "paraphrase" && len(found[id]) > 0 {
				t.Logf("%s found without a judge by %v", id, found[id])
			}
		}
	})
	t.Run("judge", func(t *testing.T) {
		srv, judge := sameTaskJudge(t, recipes)
		a := testAuditor(t, Options{})
		if err := a.EnableParaphrase(context.Background(), embed.NewTFIDF(ParaphraseDim), ParaphraseOptions{Judge: judge}); err != nil {
			t.Fatal(err)
		}
		found, cf := run(t, a)
		check(t, found, cf, map[string]bool{"verbatim": true, "renamed": true, "tests": true, "reformatted": true})
		var para, missed []string
		for id, r := range recipes {
			if r.Kind == "paraphrase" {
				if slices.Contains(found[id], MethodEmbedding) {
					para = append(para, id)
				} else {
					missed = append(missed, id)
				}
			}
		}
		// The built-in retriever ranks the true statement in the top 5 for
		// all 8 rewordings (see TestParaphraseRetrieval for the ranks).
		t.Logf("paraphrases found with the judge: %d of 8; missed %v", len(para), missed)
		if len(para) < minParaphraseFound {
			t.Errorf("judge found %d of 8 paraphrases, want >= %d (missed %v)", len(para), minParaphraseFound, missed)
		}
		n, same, bad := a.JudgeCounts()
		t.Logf("judge: %d pairs asked (%d chat calls), %d same, %d unreadable", n, srv.Calls("/v1/chat/completions"), same, bad)
		if int(same) < minParaphraseFound || bad != 0 {
			t.Errorf("judge said same %d times with %d unreadable answers, want >= %d and 0", same, bad, minParaphraseFound)
		}
	})
}
