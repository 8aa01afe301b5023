package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
)

type modelsCheckOptions struct {
	baseURL   string
	model     string
	apiKeyEnv string
	timeout   time.Duration
	json      bool
	out       io.Writer
}

func init() {
	register(&cli.Command{
		Name:  "models",
		Usage: "check model endpoints",
		Subcommands: []*cli.Command{{
			Name:  "check",
			Usage: "ping an OpenAI-compatible endpoint: list models, time a tiny chat call, test JSON mode",
			Description: "Exits 0 when the endpoint answers a chat call, 5 when it is unreachable, " +
				"refuses the key or cannot answer. The API key is read from the variable --api-key-env names.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "base-url", Usage: "API base URL including /v1", EnvVars: []string{"OPENAI_BASE_URL"},
					Value: "https://api.openai.com/v1"},
				&cli.StringFlag{Name: "model", Usage: "model for the test calls (default: the first one listed)"},
				&cli.StringFlag{Name: "api-key-env", Usage: "environment variable holding the API key", Value: llm.DefaultAPIKeyEnv},
				&cli.DurationFlag{Name: "timeout", Usage: "timeout of each call", Value: 30 * time.Second},
				&cli.BoolFlag{Name: "json", Usage: "print the findings as one JSON object (also when the check fails)"},
			},
			Action: func(c *cli.Context) error {
				return runModelsCheck(c.Context, modelsCheckOptions{
					baseURL: c.String("base-url"), model: c.String("model"), apiKeyEnv: c.String("api-key-env"),
					timeout: c.Duration("timeout"), json: c.Bool("json"), out: outWriter(c.App.Writer),
				})
			},
		}},
	})
}

// modelsCheck is what `models check` found, printed as lines or --json.
type modelsCheck struct {
	Endpoint  string   `json:"endpoint"`
	APIKeyEnv string   `json:"api_key_env"`
	APIKeySet bool     `json:"api_key_set"`
	Models    []string `json:"models"`
	ListMS    int64    `json:"list_ms"`
	Model     string   `json:"model,omitempty"`
	Answer    string   `json:"chat_answer,omitempty"`
	ChatMS    int64    `json:"chat_ms,omitempty"`
	Prompt    int      `json:"prompt_tokens,omitempty"`
	Complete  int      `json:"completion_tokens,omitempty"`
	JSONMode  string   `json:"json_mode,omitempty"` // works, not supported, not json
	JSONNote  string   `json:"json_mode_note,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// runModelsCheck reports on one endpoint. It fails (exit 5) when the
// endpoint cannot be listed or cannot answer a chat call; a missing JSON
// mode is reported, not fatal. With --json the findings so far are
// printed as one object even when it fails.
func runModelsCheck(ctx context.Context, o modelsCheckOptions) error {
	if o.apiKeyEnv == "" {
		o.apiKeyEnv = llm.DefaultAPIKeyEnv
	}
	client, err := llm.New(llm.Config{
		Stage: "models-check", BaseURL: o.baseURL, APIKeyEnv: o.apiKeyEnv, Params: llm.Params{Model: o.model},
		Timeout: o.timeout, MaxAttempts: 1, Concurrency: 1,
	}, llm.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return withCode(exitUsage, err)
	}
	r := modelsCheck{Endpoint: o.baseURL, APIKeyEnv: o.apiKeyEnv, APIKeySet: os.Getenv(o.apiKeyEnv) != ""}
	p := &checkPrinter{out: o.out, json: o.json}
	keyState := "not set (no Authorization header)"
	if r.APIKeySet {
		keyState = "set"
	}
	p.line("endpoint:  %s\napi key:   $%s %s\n", o.baseURL, o.apiKeyEnv, keyState)
	fail := func(err error) error {
		r.Error = err.Error()
		p.done(&r)
		return withCode(exitUnreachable, err)
	}

	start := time.Now()
	names, err := client.Models(ctx)
	if err != nil {
		return fail(fmt.Errorf("endpoint %s unreachable: %w", o.baseURL, err))
	}
	r.Models, r.ListMS = names, since(start).Milliseconds()
	p.line("models:    %d listed in %s: %s\n", len(names), since(start), strings.Join(names, ", "))
	model := o.model
	if model == "" {
		if len(names) == 0 {
			return fail(fmt.Errorf("endpoint %s lists no models; pass --model", o.baseURL))
		}
		model = names[0]
	}
	r.Model = model

	zero := 0.0
	start = time.Now()
	resp, err := client.Chat(ctx, llm.Request{
		Messages: []llm.Message{llm.User("Reply with the single word: pong")},
		Params:   llm.Params{Model: model, MaxTokens: 16, Temperature: &zero},
	})
	if err != nil {
		return fail(fmt.Errorf("chat with %s failed: %w", model, err))
	}
	r.Answer, r.ChatMS, r.Prompt, r.Complete = resp.Text, since(start).Milliseconds(), resp.PromptTokens, resp.CompletionTokens
	p.line("chat:      %s answered %q in %s (%d+%d tokens)\n", model, oneLine(resp.Text, 60),
		since(start), resp.PromptTokens, resp.CompletionTokens)

	start = time.Now()
	resp, err = client.Chat(ctx, llm.Request{
		Messages: []llm.Message{llm.User(`Reply with the JSON object {"ok": true} and nothing else.`)},
		Params:   llm.Params{Model: model, MaxTokens: 32, Temperature: &zero, JSONMode: true},
	})
	var obj map[string]any
	switch {
	case err != nil:
		r.JSONMode, r.JSONNote = "not supported", err.Error()
		p.line("json mode: not supported (%v)\n", err)
	case parse.JSON(resp.Text, &obj) != nil:
		r.JSONMode, r.JSONNote = "not json", resp.Text
		p.line("json mode: accepted, but the answer is not JSON: %q\n", oneLine(resp.Text, 60))
	default:
		r.JSONMode = "works"
		p.line("json mode: works (%s)\n", since(start))
	}
	return p.done(&r)
}

// checkPrinter prints models check's lines as they come, or with --json
// only the whole result at the end.
type checkPrinter struct {
	out  io.Writer
	json bool
}

func (p *checkPrinter) line(format string, args ...any) {
	if !p.json {
		fmt.Fprintf(p.out, format, args...)
	}
}

func (p *checkPrinter) done(r *modelsCheck) error {
	if p.json {
		return writeJSON(p.out, r)
	}
	return nil
}

func since(t time.Time) time.Duration { return time.Since(t).Round(time.Millisecond) }

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}
