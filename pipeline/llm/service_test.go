package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

func TestModelsRoutesStagesToEndpoints(t *testing.T) {
	llmtest.ClearEnv(t)
	cheap := llmtest.New(t)
	strong := llmtest.New(t, llmtest.WithKey("sk-strong"))
	t.Setenv("STRONG_KEY", "sk-strong")
	m, err := llm.NewModels(llm.ModelsConfig{
		Config: llm.Config{BaseURL: cheap.URL, Params: llm.Params{Model: "base-model", Temperature: ptr(0.7)}, MaxAttempts: 1},
		Endpoints: map[string]llm.Config{
			"rater":  {Params: llm.Params{Model: "cheap-model", Temperature: ptr(0.0), JSONMode: true}},
			"writer": {BaseURL: strong.URL, APIKeyEnv: "STRONG_KEY", Params: llm.Params{Model: "strong-model"}},
		},
		Stages: map[string]string{"filter": "rater"},
		Prices: llm.Prices{"cheap-*": {InputPerM: 1, OutputPerM: 2}, "strong-model": {InputPerM: 10, OutputPerM: 20}},
	}, llm.Options{Cache: llmtest.NewMemCache()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		stage, endpoint string
		server          *llmtest.Server
		model           string
		temp            float64
		json            bool
	}{
		{"filter", "", cheap, "cheap-model", 0, true},          // routed by `stages:`
		{"pack", "writer", strong, "strong-model", 0.7, false}, // named; inherits temperature
		{"simulate", "", cheap, "base-model", 0.7, false},      // top level
		{"filter", "writer", strong, "strong-model", 0.7, false},
	}
	for _, tt := range tests {
		t.Run(tt.stage+"/"+tt.endpoint, func(t *testing.T) {
			p, err := m.Params(tt.stage, tt.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			if p.Model != tt.model || p.Temperature == nil || *p.Temperature != tt.temp || p.JSONMode != tt.json {
				t.Errorf("Params = %+v (temp %v), want model %s temp %v json %v", p, p.Temperature, tt.model, tt.temp, tt.json)
			}
			c, err := m.For(tt.stage, tt.endpoint)
			if err != nil {
				t.Fatal(err)
			}
			before := len(tt.server.Requests())
			if _, err := c.Chat(context.Background(), llm.Request{Messages: []llm.Message{llm.User("hi from " + tt.stage + tt.endpoint)}}); err != nil {
				t.Fatal(err)
			}
			reqs := tt.server.Requests()
			if len(reqs) != before+1 {
				t.Fatalf("server got %d requests, want %d", len(reqs), before+1)
			}
			if got := reqs[len(reqs)-1].Chat.Model; got != tt.model {
				t.Errorf("request model = %q, want %q", got, tt.model)
			}
			again, err := m.For(tt.stage, tt.endpoint)
			if err != nil || again != c {
				t.Errorf("For twice gave a different client (%p vs %p, %v)", again, c, err)
			}
		})
	}
	if strong.AuthFailures() != 0 {
		t.Errorf("writer endpoint saw %d auth failures; its key variable was not used", strong.AuthFailures())
	}
	snap := m.Snapshot()
	if got := strings.Join(snap.StageNames(), ","); got != "filter,pack,simulate" {
		t.Errorf("accounted stages = %s, want filter,pack,simulate", got)
	}
	if snap.Stages["filter"].Requests != 2 || snap.Total.Requests != 4 {
		t.Errorf("requests filter=%d total=%d, want 2 and 4", snap.Stages["filter"].Requests, snap.Total.Requests)
	}
	pk := snap.Stages["pack"]
	want := (float64(pk.PromptTokens)*10 + float64(pk.CompletionTokens)*20) / 1e6
	if pk.Cost == 0 || math.Abs(pk.Cost-want) > 1e-12 {
		t.Errorf("pack cost = %v, want %v from the price table", pk.Cost, want)
	}
	if snap.Stages["simulate"].Cost != 0 {
		t.Errorf("simulate (base-model, not in the price table) cost = %v, want 0", snap.Stages["simulate"].Cost)
	}
}

func TestModelsEnvOverlayPerStage(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	t.Setenv("CODEFEEDBACK_SIMULATE_MODEL", "env-model")
	m, err := llm.NewModels(llm.ModelsConfig{Config: llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "file-model"}}}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for stage, want := range map[string]string{"simulate": "env-model", "filter": "file-model"} {
		p, err := m.Params(stage, "")
		if err != nil {
			t.Fatal(err)
		}
		if p.Model != want {
			t.Errorf("stage %s model = %q, want %q", stage, p.Model, want)
		}
	}
}

func TestModelsWithoutKey(t *testing.T) {
	llmtest.ClearEnv(t)
	local := llmtest.New(t)
	tests := []struct {
		name     string
		cfg      llm.ModelsConfig
		endpoint string
		usable   bool
	}{
		{"hosted default, no key", llm.ModelsConfig{Config: llm.Config{Params: llm.Params{Model: "gpt-4o-mini"}}}, "", false},
		{"hosted default explicit, no key", llm.ModelsConfig{Config: llm.Config{BaseURL: llm.DefaultBaseURL + "/", Params: llm.Params{Model: "m"}}}, "", false},
		{"local server, no key", llm.ModelsConfig{Config: llm.Config{BaseURL: local.URL, Params: llm.Params{Model: "m"}}}, "", true},
		{"local named endpoint", llm.ModelsConfig{Config: llm.Config{Params: llm.Params{Model: "m"}},
			Endpoints: map[string]llm.Config{"local": {BaseURL: local.URL}}}, "local", true},
		{"hosted top level beside local endpoint", llm.ModelsConfig{Config: llm.Config{Params: llm.Params{Model: "m"}},
			Endpoints: map[string]llm.Config{"local": {BaseURL: local.URL}}}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := llm.NewModels(tt.cfg, llm.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ok, why := m.Usable("rate", tt.endpoint)
			if ok != tt.usable {
				t.Errorf("Usable = %v (%s), want %v", ok, why, tt.usable)
			}
			_, err = m.For("rate", tt.endpoint)
			if got := errors.Is(err, llm.ErrNoModel); got == tt.usable {
				t.Errorf("For error = %v; want ErrNoModel: %v", err, !tt.usable)
			}
			if !tt.usable && err != nil && !strings.Contains(err.Error(), "$OPENAI_API_KEY") {
				t.Errorf("error %q does not name the key variable", err)
			}
		})
	}
}

// askOptions are the settings of the test stage that asks the model.
type askOptions struct {
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Calls is how many requests one item makes in turn (default 1), as a
	// multi-turn stage does.
	Calls int `yaml:"calls" json:"calls"`
}

func init() {
	// llm-svc-ask answers each query with the model, or passes it through
	// marked skipped when the run has no model.
	pipeline.Register("llm-svc-ask", askOptions{}, func(o askOptions, svc *pipeline.Services) (pipeline.EachFunc, error) {
		return func(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
			q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
			if err != nil {
				return nil, pipeline.Permanent(err)
			}
			chat, err := llm.ForStage(svc, o.Endpoint)
			if errors.Is(err, llm.ErrNoModel) {
				svc.Stats.Add("skipped", 1)
				return []pipeline.Item{in}, nil
			}
			if err != nil {
				return nil, pipeline.Permanent(err)
			}
			var r llm.Response
			for i := range max(o.Calls, 1) {
				text := q.Text
				if i > 0 {
					text = fmt.Sprintf("%s (turn %d)", q.Text, i+1)
				}
				if r, err = chat.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User(text)}}); err != nil {
					return nil, err
				}
			}
			q.Metadata = map[string]string{"answer": r.Text}
			out, err := pipeline.QueryItem(q)
			return []pipeline.Item{out}, err
		}, nil
	})
}

func writeRun(t *testing.T, n int, pipelineYAML string) (cfgFile, dir string) {
	t.Helper()
	dir = t.TempDir()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":"q%d","text":"question %d"}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgFile = filepath.Join(dir, "p.yaml")
	y := strings.ReplaceAll(pipelineYAML, "$DIR", dir)
	if err := os.WriteFile(cfgFile, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgFile, dir
}

func runPipeline(t *testing.T, file, dir string) *pipeline.Manifest {
	t.Helper()
	cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return m
}

func TestModelSectionInPipelineRun(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	file, dir := writeRun(t, 5, `
inputs: [{path: q.jsonl}]
model:
  base_url: `+srv.URL+`
  model: base-model
  endpoints:
    rater: {model: cheap-model}
  prices:
    cheap-model: {input_per_m: 100, output_per_m: 100}
stages:
  - {stage: llm-svc-ask, name: ask, settings: {endpoint: rater}}
outputs: [{path: $DIR/out.jsonl}]
`)
	m := runPipeline(t, file, dir)
	rec := m.Stages[0]
	if rec.Counts.Out != 5 || rec.Stats["skipped"] != 0 {
		t.Fatalf("stage out=%d skipped=%v, want 5 answered", rec.Counts.Out, rec.Stats["skipped"])
	}
	if rec.Usage.Requests != 5 || rec.Usage.PromptTokens == 0 || rec.Usage.CostUSD <= 0 {
		t.Errorf("manifest usage = %+v, want 5 paid requests with tokens and cost", rec.Usage)
	}
	// The model service's own report (per-stage usage and cost) is in the manifest.
	var extra struct {
		Model json.RawMessage `json:"model"`
	}
	if err := json.Unmarshal(m.Extra, &extra); err != nil || !strings.Contains(string(extra.Model), `"ask":{"requests":5`) {
		t.Errorf("manifest extra = %s (%v), want the model service report with 5 requests for stage ask", m.Extra, err)
	}
	for _, r := range srv.Requests() {
		if r.Chat.Model != "cheap-model" {
			t.Errorf("request model %q, want cheap-model", r.Chat.Model)
		}
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "echo: question"); got != 5 {
		t.Errorf("output has %d model answers, want 5:\n%s", got, out)
	}

	// A second run answers from the run store: no new requests, no new cost.
	calls := srv.Calls("/v1/chat/completions")
	runPipeline(t, file, dir)
	if got := srv.Calls("/v1/chat/completions"); got != calls {
		t.Errorf("re-run made %d new requests, want 0", got-calls)
	}
}

func TestModelSectionWithoutKeySkips(t *testing.T) {
	llmtest.ClearEnv(t)
	file, dir := writeRun(t, 3, `
inputs: [{path: q.jsonl}]
model: {model: gpt-4o-mini}
stages:
  - {stage: llm-svc-ask, name: ask}
`)
	m := runPipeline(t, file, dir)
	rec := m.Stages[0]
	if rec.Status != "ran" || rec.Counts.Out != 3 || rec.Stats["skipped"] != 3 {
		t.Errorf("status %s out %d skipped %v, want ran, 3 items passed through as skipped", rec.Status, rec.Counts.Out, rec.Stats["skipped"])
	}
}

func TestModelSectionErrors(t *testing.T) {
	llmtest.ClearEnv(t)
	tests := []struct {
		name, section string
		want          []string
	}{
		{"misspelt key", "model: {model: m, temprature: 0.2}", []string{":4:", `unknown key "temprature"`, `did you mean "temperature"`}},
		{"route to unknown endpoint", "model:\n  model: m\n  endpoints: {rater: {model: c}}\n  stages: {filter: writer}",
			[]string{"model:", `unknown endpoint "writer"`, "known: rater"}},
		{"credentials in url", "model: {base_url: 'https://u:p@example.invalid/v1', model: m}", []string{"must not carry credentials"}},
		{"bad endpoint url", "model:\n  model: m\n  endpoints: {w: {base_url: 'ftp://x'}}", []string{"endpoint w", "want http(s)://"}},
		{"negative price", "model: {model: m, prices: {m: {input_per_m: -1}}}", []string{"negative price"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file, dir := writeRun(t, 1, "inputs: [{path: q.jsonl}]\nstages: [{stage: llm-svc-ask}]\n\n"+tt.section+"\n")
			_, err := pipeline.Load(file, filepath.Join(dir, "run"))
			if err == nil {
				t.Fatal("Load accepted the section")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// keyOnly is a model service that can report parameters but not chat.
type keyOnly struct{}

func (keyOnly) KeyParams(stage, endpoint string) (any, error) { return "k", nil }

// plainClient is a client of a fake model, with no key in the environment,
// given to a stage as its model.
func plainClient(t *testing.T) *llm.Client {
	t.Helper()
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	c, err := llm.New(llm.Config{BaseURL: srv.URL, Params: llm.Params{Model: "m"}}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestForStagePassesPlainChatter(t *testing.T) {
	c := plainClient(t)
	got, err := llm.ForStage(&pipeline.Services{Name: "x", Model: c}, "")
	if err != nil || got != llm.Chatter(c) {
		t.Errorf("ForStage(plain client) = %v, %v; want the client itself", got, err)
	}
	if _, err := llm.ForStage(&pipeline.Services{Name: "x", Model: keyOnly{}}, ""); err == nil || errors.Is(err, llm.ErrNoModel) {
		t.Errorf("ForStage(a service that cannot chat) error = %v, want a type error", err)
	}
	_, err = llm.ForStage(&pipeline.Services{Name: "x"}, "")
	if !errors.Is(err, llm.ErrNoModel) || !strings.Contains(err.Error(), "model:") {
		t.Errorf("ForStage(nil) error = %v, want ErrNoModel with a hint", err)
	}
}

// TestStageChat: a stage built without a model gets no Chatter and the
// key "none"; with one, the Chatter and the model's key; a model that
// cannot serve the stage is an error, not a pass-through.
func TestStageChat(t *testing.T) {
	c := plainClient(t)
	if chat, key, err := llm.StageChat(&pipeline.Services{Name: "x"}, ""); chat != nil || key != "none" || err != nil {
		t.Errorf("StageChat(no model) = %v, %v, %v; want nil, none, nil", chat, key, err)
	}
	want, _ := c.KeyParams("x", "")
	if chat, key, err := llm.StageChat(&pipeline.Services{Name: "x", Model: c}, ""); chat != llm.Chatter(c) || key != want || err != nil {
		t.Errorf("StageChat(plain client) = %v, %v, %v; want the client and its key %v", chat, key, err, want)
	}
	if chat, _, err := llm.StageChat(&pipeline.Services{Name: "x", Model: keyOnly{}}, ""); chat != nil || err == nil {
		t.Errorf("StageChat(a service that cannot chat) = %v, %v; want an error", chat, err)
	}
}

// EstimateCost prices a stage's estimated tokens with the run's price table
// for the model of the endpoint the stage is routed to, live and at that
// endpoint's batch discount.
func TestEstimateCost(t *testing.T) {
	m, err := llm.NewModels(llm.ModelsConfig{
		Config:    llm.Config{BaseURL: "http://127.0.0.1:1/v1", Params: llm.Params{Model: "big"}},
		Endpoints: map[string]llm.Config{"cheap": {Params: llm.Params{Model: "small"}, Batch: true, BatchDiscount: 0.4}},
		Stages:    map[string]string{"filter": "cheap"},
		Prices:    llm.Prices{"big": {InputPerM: 10, OutputPerM: 30}, "small": {InputPerM: 1, OutputPerM: 2}},
	}, llm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stage       string
		live, batch float64
		batched     bool
	}{
		{"filter", 1e6*1/1e6 + 5e5*2/1e6, (1 + 1) * 0.4, true},
		{"explain", 1e6*10/1e6 + 5e5*30/1e6, (10 + 15) * 0.5, false},
	} {
		live, batch, batched := m.EstimateCost(c.stage, 1_000_000, 500_000)
		if math.Abs(live-c.live) > 1e-9 || math.Abs(batch-c.batch) > 1e-9 || batched != c.batched {
			t.Errorf("%s: live %v batch %v batched %v; want %v %v %v", c.stage, live, batch, batched, c.live, c.batch, c.batched)
		}
	}
}
