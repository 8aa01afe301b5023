package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

func TestModelsCheck(t *testing.T) {
	const key = "sk-models-check-secret"
	t.Setenv("MC_KEY", key)
	srv := llmtest.New(t, llmtest.WithKey(key), llmtest.WithModels("m-small", "m-large"))
	var out bytes.Buffer
	err := runModelsCheck(context.Background(), modelsCheckOptions{baseURL: srv.URL, apiKeyEnv: "MC_KEY", timeout: 5 * time.Second, out: &out})
	if err != nil {
		t.Fatalf("got %v\n%s", err, out.String())
	}
	for _, want := range []string{"models:    2 listed", "m-large, m-small", `chat:      m-large answered "echo: Reply with the single word: pong"`,
		"json mode: works", "$MC_KEY set"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), key) {
		t.Errorf("output shows the key:\n%s", out.String())
	}
	reqs := srv.Requests()
	if len(reqs) != 3 || reqs[1].Chat.Model != "m-large" || reqs[2].Chat.ResponseFormat == nil {
		t.Errorf("requests: got %d, want models + chat + JSON-mode chat", len(reqs))
	}

	// JSON mode refused by the server: reported, not fatal.
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		if c.Request.ResponseFormat != nil {
			return llmtest.Reply{Fault: llmtest.Fault{Kind: llmtest.Status, Status: 400}}
		}
		return llmtest.Reply{Text: "pong"}
	})
	out.Reset()
	if err := runModelsCheck(context.Background(), modelsCheckOptions{baseURL: srv.URL, model: "m-small", apiKeyEnv: "MC_KEY", timeout: 5 * time.Second, out: &out}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "json mode: not supported") || !strings.Contains(out.String(), `answered "pong"`) {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestModelsCheckFailures(t *testing.T) {
	const key = "sk-wrong-key-value"
	t.Setenv("MC_KEY", key)
	dead := httptest.NewServer(nil)
	deadURL := dead.URL + "/v1"
	dead.Close() // nothing listens there any more (loopback only)
	srv := llmtest.New(t, llmtest.WithKey("sk-right"))
	for name, url := range map[string]string{"unreachable": deadURL, "wrong key": srv.URL} {
		var out bytes.Buffer
		err := runModelsCheck(context.Background(), modelsCheckOptions{baseURL: url, apiKeyEnv: "MC_KEY", timeout: 2 * time.Second, out: &out})
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != exitUnreachable || !strings.Contains(err.Error(), "unreachable") {
			t.Errorf("%s: got %v, want exit %d saying unreachable", name, err, exitUnreachable)
			continue
		}
		if strings.Contains(err.Error(), key) || strings.Contains(out.String(), key) {
			t.Errorf("%s: key leaked: %v\n%s", name, err, out.String())
		}
	}
}

// TestModelsCheckJSON: --json prints one object with what was found, also
// when the check fails (exit 5), and never the key.
func TestModelsCheckJSON(t *testing.T) {
	const key = "sk-models-json-secret"
	t.Setenv("MC_KEY", key)
	srv := llmtest.New(t, llmtest.WithKey(key), llmtest.WithModels("m-one"))
	var out bytes.Buffer
	if err := runModelsCheck(context.Background(), modelsCheckOptions{baseURL: srv.URL, apiKeyEnv: "MC_KEY", timeout: 5 * time.Second, json: true, out: &out}); err != nil {
		t.Fatalf("got %v\n%s", err, out.String())
	}
	var r modelsCheck
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out.String())
	}
	if !r.APIKeySet || len(r.Models) != 1 || r.Model != "m-one" || r.JSONMode != "works" || r.Error != "" || !strings.Contains(r.Answer, "pong") {
		t.Errorf("got %+v, want the key set, m-one listed and answering, JSON mode working", r)
	}

	dead := httptest.NewServer(nil)
	dead.Close()
	out.Reset()
	err := runModelsCheck(context.Background(), modelsCheckOptions{baseURL: dead.URL + "/v1", apiKeyEnv: "MC_KEY", timeout: 2 * time.Second, json: true, out: &out})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUnreachable {
		t.Fatalf("unreachable: got %v, want exit %d", err, exitUnreachable)
	}
	r = modelsCheck{}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || !strings.Contains(r.Error, "unreachable") || strings.Contains(out.String(), key) {
		t.Errorf("unreachable: got %q (%v), want one JSON object with the error and no key", out.String(), err)
	}
}
