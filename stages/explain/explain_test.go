package explain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// fake starts a scripted model and returns a client for it.
func fake(tb testing.TB, script llmtest.Script) (*llmtest.Server, *llm.Client) {
	tb.Helper()
	srv := llmtest.New(tb)
	srv.Script(script)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "fake-chat"}, MaxAttempts: 1},
		llm.Options{HTTPClient: srv.Client()})
	if err != nil {
		tb.Fatal(err)
	}
	return srv, c
}

// explainWith explains d with a new Explainer over c that allows repairs
// repair requests; an error fails the test.
func explainWith(t *testing.T, c llm.Chatter, repairs int, d schema.Dialogue) (schema.Dialogue, Report) {
	t.Helper()
	ex, err := New(c, repairs)
	if err != nil {
		t.Fatal(err)
	}
	got, rep, err := ex.Explain(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return got, rep
}

const (
	code1 = "def add(a, b):\n    return a - b\n"
	code2 = "def add(a, b):\n    return a + b\n"
)

func sample() schema.Dialogue {
	return schema.Dialogue{ID: "dlg-1", Stage: "correct", Labels: map[string]string{"bug_kind": "logic"}, Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Write add(a, b)."},
		{Role: schema.RoleAssistant, Content: "Here it is:\n\n```python\n" + code1 + "```"},
		{Role: schema.RoleExecution, Content: "AssertionError: add(1, 2) == 3"},
		{Role: schema.RoleAssistant, Content: "The sign was wrong. Fixed:\n\n```python\n" + code2 + "```\n\nAnd a check:\n~~~\nprint(add(1, 2))\n~~~"},
		{Role: schema.RoleExecution, Content: "3"},
		{Role: schema.RoleAssistant, Content: "All tests pass now."},
	}}
}

// checkSameCode fails unless every message of got keeps the code of want
// byte for byte, and turns without code are unchanged.
func checkSameCode(t *testing.T, want, got schema.Dialogue) {
	t.Helper()
	if len(got.Messages) != len(want.Messages) {
		t.Fatalf("got %d messages, want %d", len(got.Messages), len(want.Messages))
	}
	for i, w := range want.Messages {
		g := got.Messages[i]
		if g.Role != w.Role {
			t.Errorf("message %d: got role %s, want %s", i, g.Role, w.Role)
		}
		if w.Role != schema.RoleAssistant || !HasCode(w.Content) {
			if g.Content != w.Content {
				t.Errorf("message %d (no code) changed:\ngot  %q\nwant %q", i, g.Content, w.Content)
			}
			continue
		}
		if !strings.HasSuffix(g.Content, w.Content) || len(g.Content) < len(w.Content) {
			t.Errorf("message %d: got %q, want a preface (or none) followed by %q", i, g.Content, w.Content)
		}
		wb, gb := parse.CodeBlocks(w.Content), parse.CodeBlocks(g.Content)
		if len(wb) != len(gb) {
			t.Fatalf("message %d: got %d code blocks, want %d", i, len(gb), len(wb))
		}
		for k := range wb {
			if gb[k].Code != wb[k].Code || gb[k].Lang != wb[k].Lang {
				t.Errorf("message %d block %d: got %q, want %q", i, k, gb[k].Code, wb[k].Code)
			}
		}
	}
}

func TestExplainKeepsCodeByteIdentical(t *testing.T) {
	var turns atomic.Int64
	srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		n := turns.Add(1)
		if n == 1 {
			return llmtest.Reply{Text: "The function `add` subtracts `b` from `a` and returns the difference."}
		}
		return llmtest.Reply{Text: "This version adds the two arguments with `+`, which is what the request asked for, and prints one sample call."}
	})
	in := sample()
	got, rep := explainWith(t, c, 2, in)
	checkSameCode(t, sample(), got)
	if rep.Turns != 2 || rep.Repairs != 0 || len(rep.Rejected) != 0 {
		t.Errorf("got report %+v, want 2 turns, no repairs, nothing rejected", rep)
	}
	if got.Labels[LabelExplained] != "2" || got.Labels["bug_kind"] != "logic" {
		t.Errorf("got labels %v, want explained_turns=2 and the input's labels", got.Labels)
	}
	if in.Messages[1].Content != sample().Messages[1].Content || in.Labels[LabelExplained] != "" {
		t.Error("Explain modified its input dialogue")
	}
	if !strings.HasPrefix(got.Messages[3].Content, "This version adds") {
		t.Errorf("turn 3: got %q, want the second preface first", got.Messages[3].Content)
	}
	// The second request shows the first turn's preface as history and the
	// execution result, and names the latest user request.
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d model calls, want 2", len(reqs))
	}
	last := reqs[1].Chat.Messages[len(reqs[1].Chat.Messages)-1].Content
	for _, want := range []string{"subtracts `b` from `a`", "AssertionError: add(1, 2) == 3", "Write add(a, b).", code2} {
		if !strings.Contains(last, want) {
			t.Errorf("second request lacks %q:\n%s", want, last)
		}
	}
}

// TestExplainGate scripts a model that misbehaves in each way the gate
// knows: code instead of an explanation, a transition phrase, text that
// names nothing of the code. A repaired answer is used; one that stays bad
// leaves the turn unexplained (nothing stripped and kept) and is labelled.
func TestExplainGate(t *testing.T) {
	rewritten := "The function adds two numbers:\n\n```python\ndef add(x, y):\n    return x + y\n```"
	good := "It returns the sum of the two arguments of `add` using the + operator."
	tests := []struct {
		name        string
		request     string   // the task; sample's when ""
		answers     []string // in order; the last repeats
		wantRepairs int
		wantReason  string // "" = explained
		wantPrefix  string
	}{
		{name: "code repaired", answers: []string{rewritten, good}, wantRepairs: 1, wantPrefix: "It returns the sum"},
		{name: "code stays", answers: []string{rewritten}, wantRepairs: 2, wantReason: "code"},
		{name: "code only", answers: []string{"```python\ndef add(x, y):\n    return x + y\n```"}, wantRepairs: 2, wantReason: "code"},
		{name: "bare code lines", answers: []string{"def add(x, y):\n    return x + y"}, wantRepairs: 2, wantReason: "code"},
		{name: "transition", answers: []string{"Good point. Here's the updated code:"}, wantRepairs: 2, wantReason: "transition"},
		{name: "thanks", answers: []string{"Thanks for the feedback. Here is a revised version of add that works:"}, wantRepairs: 2, wantReason: "transition"},
		{name: "transition repaired", answers: []string{"Sure! Here you go.", good}, wantRepairs: 1, wantPrefix: "It returns the sum"},
		{name: "unrelated", answers: []string{"This is a solid and well structured answer to the question above."}, wantRepairs: 2, wantReason: "unrelated"},
		{name: "too short", answers: []string{"Adds."}, wantRepairs: 2, wantReason: "too_short"},
		{name: "good", answers: []string{good}, wantPrefix: "It returns the sum"},
		{name: "structure only", request: "Write a function to find the minimum cost path to reach the corner.", answers: []string{"A loop takes `i` from `range(n)` and updates `tc`; it returns `tc[m][n]` at the end of `add`."}, wantRepairs: 2, wantReason: "no_purpose"},
		{name: "structure repaired", request: "Write a function to find the minimum cost path to reach the corner.", answers: []string{"A loop takes `i` from `range(n)` and updates `tc`; it returns `tc[m][n]` at the end of `add`.", "`add` finds the minimum cost path: each entry of `tc` holds the cheapest way to reach that cell."}, wantRepairs: 1, wantPrefix: "`add` finds"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			srv, c := fake(t, func(call llmtest.Call) llmtest.Reply {
				i := int(n.Add(1)) - 1
				return llmtest.Reply{Text: tc.answers[min(i, len(tc.answers)-1)]}
			})
			d := sample()
			d.Messages = d.Messages[:2]
			if tc.request != "" {
				d.Messages[0].Content = tc.request
			}
			got, rep := explainWith(t, c, 2, d)
			if rep.Repairs != tc.wantRepairs {
				t.Errorf("got %d repairs, want %d", rep.Repairs, tc.wantRepairs)
			}
			if srv.Calls("/v1/chat/completions") != 1+tc.wantRepairs {
				t.Errorf("got %d model calls, want %d", srv.Calls("/v1/chat/completions"), 1+tc.wantRepairs)
			}
			if tc.wantReason != "" {
				if got.Messages[1].Content != d.Messages[1].Content {
					t.Errorf("got %q, want the turn unexplained", got.Messages[1].Content)
				}
				if len(rep.Rejected) != 1 || rep.Rejected[0].Reason != tc.wantReason {
					t.Errorf("got rejections %v, want one %s", rep.Rejected, tc.wantReason)
				}
				if got.Labels[LabelRejected] != "1" || got.Labels[LabelReasons] != tc.wantReason || got.Labels[LabelExplained] != "0" {
					t.Errorf("got labels %v, want %s=1 %s=%s", got.Labels, LabelRejected, LabelReasons, tc.wantReason)
				}
				return
			}
			checkSameCode(t, d, got)
			if !strings.HasPrefix(got.Messages[1].Content, tc.wantPrefix) {
				t.Errorf("got %q, want it to start with %q", got.Messages[1].Content, tc.wantPrefix)
			}
			if strings.Contains(got.Messages[1].Content, "def add(x, y)") {
				t.Errorf("the model's rewritten code reached the dialogue: %q", got.Messages[1].Content)
			}
		})
	}
}

func TestSameCode(t *testing.T) {
	orig := "Fixed:\n```python\nx = 1\n```"
	tests := []struct {
		name, explained string
		ok              bool
	}{
		{"preface", "It sets x.\n\n" + orig, true},
		{"changed code", "It sets x.\n\nFixed:\n```python\nx = 2\n```", false},
		{"extra block", "It sets x:\n```python\nx = 1\n```\n\n" + orig, false},
		{"unclosed fence in preface", "It sets x.\n```\n\n" + orig, false},
	}
	for _, tc := range tests {
		err := SameCode(orig, tc.explained)
		if (err == nil) != tc.ok {
			t.Errorf("%s: got error %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && !errors.Is(err, ErrCodeChanged) {
			t.Errorf("%s: got %v, want ErrCodeChanged", tc.name, err)
		}
	}
}

func TestStageWithoutModelPassesThrough(t *testing.T) {
	var logs bytes.Buffer
	stats := pipeline.NewStats()
	svc := &pipeline.Services{Name: "explain", Stats: stats, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	st, err := newStage(DefaultOptions, svc)
	if err != nil {
		t.Fatal(err)
	}
	in, err := pipeline.DialogueItem(sample())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		out, err := st.Each(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || !bytes.Equal(out[0].Data, in.Data) {
			t.Fatalf("got %d items (%s), want the input unchanged", len(out), out[0].Data)
		}
		st.Observe(out[0])
	}
	vals, _ := stats.Snapshot()
	if vals["skipped/no_model"] != 2 {
		t.Errorf("got stats %v, want skipped/no_model=2", vals)
	}
	if strings.Count(logs.String(), "explain: skipped, no model configured") != 1 {
		t.Errorf("got log %q, want one line saying the stage was skipped", logs.String())
	}
}

func TestStageWithModel(t *testing.T) {
	_, c := fake(t, func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "The code defines `add`, which combines its two arguments and returns the result."}
	})
	stats := pipeline.NewStats()
	svc := &pipeline.Services{Name: "explain", Stats: stats, Model: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	st, err := newStage(DefaultOptions, svc)
	if err != nil {
		t.Fatal(err)
	}
	d := sample()
	in, _ := pipeline.DialogueItem(d)
	q, _ := pipeline.QueryItem(schema.Query{ID: "q1", Text: "x"})
	for _, it := range []pipeline.Item{in, q} {
		out, err := st.Each(context.Background(), it)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 {
			t.Fatalf("got %d items, want 1", len(out))
		}
		if it.Kind != pipeline.KindDialogue {
			if !bytes.Equal(out[0].Data, it.Data) {
				t.Errorf("a %s item changed", it.Kind)
			}
			continue
		}
		got, err := pipeline.As[schema.Dialogue](out[0], pipeline.KindDialogue)
		if err != nil {
			t.Fatal(err)
		}
		checkSameCode(t, d, got)
		st.Observe(out[0])
		// Fed back in, an explained dialogue is left alone.
		again, err := st.Each(context.Background(), out[0])
		if err != nil || !bytes.Equal(again[0].Data, out[0].Data) {
			t.Errorf("re-explaining changed the dialogue (err %v)", err)
		}
	}
	vals, _ := stats.Snapshot()
	if vals["dialogues/explained"] != 1 || vals["turns/explained"] != 2 {
		t.Errorf("got stats %v, want 1 dialogue and 2 turns explained", vals)
	}
}

// TestExplainRealCodeFeedback explains every code turn of the real
// Code-Feedback sample with a model that also tries to slip a code block
// into some prefaces, and checks all code stays byte-identical.
func TestExplainRealCodeFeedback(t *testing.T) {
	path := sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl")
	src, err := schema.OpenSource(path, schema.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var n atomic.Int64
	_, c := fake(t, func(call llmtest.Call) llmtest.Reply {
		if n.Add(1)%3 == 0 {
			return llmtest.Reply{Text: "Here is a cleaner version:\n```python\nprint('rewritten')\n```"}
		}
		reply := call.LastUser()
		if i := strings.Index(reply, "<reply>"); i >= 0 {
			reply = reply[i:]
		}
		names := gates.Names(strings.Join(codeOf(reply), "\n"))
		if len(names) == 0 {
			names = []string{"code"}
		}
		return llmtest.Reply{Text: fmt.Sprintf("This step builds on `%s` and explains its approach in plain words before the code runs.", names[0])}
	})
	ex, err := New(c, 1)
	if err != nil {
		t.Fatal(err)
	}
	dialogues, turns, rejected := 0, 0, 0
	for {
		r, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d := *r.Dialogue
		got, rep, err := ex.Explain(context.Background(), d)
		if err != nil {
			t.Fatalf("%s: %v", d.ID, err)
		}
		checkSameCode(t, d, got)
		for _, m := range got.Messages {
			if strings.Contains(m.Content, "print('rewritten')") {
				t.Fatalf("%s: a model-written code block reached the dialogue", d.ID)
			}
		}
		dialogues++
		turns += rep.Turns
		rejected += len(rep.Rejected)
	}
	if dialogues != 10 || turns == 0 {
		t.Fatalf("got %d dialogues and %d code turns, want 10 dialogues with code turns", dialogues, turns)
	}
	if rejected == 0 {
		t.Errorf("no preface was rejected, want the code-only answers that survive the repair rejected")
	}
	t.Logf("explained %d code turns in %d real Code-Feedback dialogues, %d left unexplained by the gate", turns, dialogues, rejected)
}

func codeOf(s string) []string {
	var out []string
	for _, b := range parse.CodeBlocks(s) {
		out = append(out, b.Code)
	}
	return out
}
