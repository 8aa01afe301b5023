package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, s *Server, path, auth, body string) (*http.Response, string, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

const chatBody = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`

func TestWireFormat(t *testing.T) {
	s := New(t, WithKey("k1"))
	resp, body, err := post(t, s, "/chat/completions", "Bearer k1", chatBody)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	var out struct {
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || len(out.Choices) != 1 ||
		out.Choices[0].Message.Content != "echo: hi" || out.Choices[0].FinishReason != "stop" || out.Usage.PromptTokens == 0 {
		t.Errorf("body: got %s (%v)", body, err)
	}

	_, body, _ = post(t, s, "/chat/completions", "Bearer k1",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a longer question here"}]}`)
	events := strings.Split(strings.TrimSpace(body), "\n\n")
	if last := events[len(events)-1]; last != "data: [DONE]" {
		t.Errorf("stream must end with [DONE], got %q", last)
	}
	var text strings.Builder
	sawUsage := false
	for _, ev := range events[:len(events)-1] {
		var chunk struct {
			Choices []struct{ Delta struct{ Content string } }
			Usage   *struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &chunk); err != nil {
			t.Fatalf("event %q: %v", ev, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Delta.Content)
		}
		sawUsage = sawUsage || (chunk.Usage != nil && chunk.Usage.TotalTokens > 0)
	}
	if text.String() != "echo: a longer question here" || !sawUsage || len(events) < 5 {
		t.Errorf("stream: got text %q usage %v in %d events", text.String(), sawUsage, len(events))
	}

	resp, body, _ = post(t, s, "/chat/completions", "Bearer nope", chatBody)
	if resp.StatusCode != 401 || !strings.Contains(body, "nope") || s.AuthFailures() != 1 {
		t.Errorf("bad key: got %d %s", resp.StatusCode, body)
	}
	_, body, _ = post(t, s, "/embeddings", "Bearer k1", `{"model":"e","input":"one text"}`)
	if !strings.Contains(body, `"index":0`) || strings.Contains(body, `"index":1`) {
		t.Errorf("embeddings of one string: got %s", body)
	}
	if s.Calls("/v1/chat/completions") != 3 || s.Calls("/v1/embeddings") != 1 || len(s.Requests()) != 4 {
		t.Errorf("counts: chat %d embed %d recorded %d", s.Calls("/v1/chat/completions"), s.Calls("/v1/embeddings"), len(s.Requests()))
	}
}

func TestFaults(t *testing.T) {
	s := New(t)
	s.FailNext(Fault{Kind: Status, Status: 429, RetryAfter: "7"}, Fault{Kind: Truncated}, Fault{Kind: EmptyChoices},
		Fault{Kind: Drop}, Fault{Kind: Body, Body: "not json"}, Fault{Kind: Stall, Stall: 50 * time.Millisecond})
	resp, _, _ := post(t, s, "/chat/completions", "", chatBody)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "7" {
		t.Errorf("429: got %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	_, body, _ := post(t, s, "/chat/completions", "", chatBody)
	if json.Valid([]byte(body)) || body == "" {
		t.Errorf("truncated: got valid or empty body %q", body)
	}
	_, body, _ = post(t, s, "/chat/completions", "", chatBody)
	if !strings.Contains(body, `"choices":[]`) {
		t.Errorf("empty choices: got %s", body)
	}
	if _, _, err := post(t, s, "/chat/completions", "", chatBody); err == nil {
		t.Error("drop: got a response, want a connection error")
	}
	if _, body, _ = post(t, s, "/chat/completions", "", chatBody); body != "not json" {
		t.Errorf("body fault: got %q", body)
	}
	start := time.Now()
	if _, body, _ = post(t, s, "/chat/completions", "", chatBody); !strings.Contains(body, "echo: hi") || time.Since(start) < 50*time.Millisecond {
		t.Errorf("stall: got %q after %v", body, time.Since(start))
	}
	if !bytes.Contains(s.Requests()[0].Body, []byte(`"hi"`)) {
		t.Error("requests are not recorded")
	}
}
