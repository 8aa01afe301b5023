package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
)

type verdict struct {
	Correct bool   `json:"correct"`
	Reason  string `json:"reason"`
}

func parseVerdict(s string) (verdict, error) {
	var v verdict
	return v, parse.JSON(s, &v)
}

func TestChatParseReadsProseAroundJSON(t *testing.T) {
	srv := llmtest.New(t)
	srv.Script(func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "Sure! Here is my assessment:\n```json\n{\"correct\": false, \"reason\": \"off by one\"}\n```\nLet me know."}
	})
	c := newClient(t, srv, llm.Options{}, nil)
	v, _, err := llm.ChatParse(context.Background(), c, ask("judge"), 2, nil, parseVerdict)
	if err != nil || v.Correct || v.Reason != "off by one" {
		t.Errorf("got %+v, %v; want {false, off by one}", v, err)
	}
	if n := srv.Calls("/v1/chat/completions"); n != 1 {
		t.Errorf("calls: got %d want 1 (no repair needed)", n)
	}
}

func TestChatParseRepairs(t *testing.T) {
	srv := llmtest.New(t)
	// A scripted model: first answer unreadable, the second (after the
	// repair message) is JSON.
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		if c.N == 1 {
			return llmtest.Reply{Text: "The code looks correct to me."}
		}
		return llmtest.Reply{Text: `{"correct": true, "reason": "tests pass"}`}
	})
	c := newClient(t, srv, llm.Options{}, nil)
	v, resp, err := llm.ChatParse(context.Background(), c, ask("judge"), 2, nil, parseVerdict)
	if err != nil || !v.Correct || resp.Text != `{"correct": true, "reason": "tests pass"}` {
		t.Fatalf("got %+v, %q, %v", v, resp.Text, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests: got %d want 2", len(reqs))
	}
	msgs := reqs[1].Chat.Messages
	if len(msgs) != 3 || msgs[1].Role != "assistant" || msgs[1].Content != "The code looks correct to me." ||
		msgs[2].Role != "user" || !strings.Contains(msgs[2].Content, "could not be read") {
		t.Errorf("repair conversation: got %+v", msgs)
	}
}

func TestChatParseGivesUpWithRaw(t *testing.T) {
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: "still prose " + string(rune('a'+c.N))} })
	c := newClient(t, srv, llm.Options{}, nil)
	_, _, err := llm.ChatParse(context.Background(), c, ask("judge"), 2, func(error) string { return "JSON please" }, parseVerdict)
	var pe *llm.ParseError
	if !errors.As(err, &pe) || pe.Raw != "still prose d" || pe.Attempts != 3 || !errors.Is(err, parse.ErrNoJSON) {
		t.Fatalf("got %v (%+v), want ParseError with the third raw answer", err, pe)
	}
	if n := srv.Calls("/v1/chat/completions"); n != 3 {
		t.Errorf("calls: got %d want 3 (1 + 2 repairs)", n)
	}
	// Refusals are read as failures too, with the raw text kept.
	srv.Script(func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: "I'm sorry, but I can't help with that."} })
	_, _, err = llm.ChatParse(context.Background(), c, ask("other"), 0, nil, parseVerdict)
	if !errors.As(err, &pe) || !errors.Is(err, parse.ErrRefusal) || pe.Raw == "" {
		t.Errorf("refusal: got %v, want ParseError wrapping ErrRefusal", err)
	}
}
