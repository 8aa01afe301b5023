package llm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

// answerOf is the scripted model: a deterministic answer per question.
func answerOf(q string) string { return "answer to " + strings.ToUpper(q) }

func scripted(t *testing.T) *llmtest.Server {
	srv := llmtest.New(t, llmtest.WithKey(testKey))
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: answerOf(c.LastUser())} })
	return srv
}

func batchClient(t *testing.T, srv *llmtest.Server, cache *llmtest.MemCache, acct *llm.Accountant, edit func(*llm.Config)) *llm.Client {
	return newClient(t, srv, llm.Options{Cache: cache, Accountant: acct}, func(c *llm.Config) {
		c.Batch = true
		c.BatchWindow = 100 * time.Millisecond
		c.BatchPoll = 5 * time.Millisecond
		c.Concurrency = 64
		if edit != nil {
			edit(c)
		}
	})
}

// askAll sends n questions at once, as an engine's workers do, and returns
// the answers in order.
func askAll(t *testing.T, ctx context.Context, c *llm.Client, n int) ([]string, []error) {
	t.Helper()
	answers, errs := make([]string, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.Chat(ctx, ask(fmt.Sprintf("question %d", i)))
			answers[i], errs[i] = r.Text, err
		}()
	}
	wg.Wait()
	return answers, errs
}

var prices = llm.Prices{"fake-chat": {InputPerM: 1, OutputPerM: 2}}

// TestBatchEqualsLive: 40 concurrent requests become one batch whose answers
// are the live answers, priced at half; a re-run is answered by the cache.
func TestBatchEqualsLive(t *testing.T) {
	srv := scripted(t)
	cache := llmtest.NewMemCache()
	acct := llm.NewAccountant(prices, 0)
	c := batchClient(t, srv, cache, acct, nil)
	answers, errs := askAll(t, context.Background(), c, 40)
	for i := range answers {
		if errs[i] != nil || answers[i] != answerOf(fmt.Sprintf("question %d", i)) {
			t.Fatalf("answer %d = %q, %v; want %q", i, answers[i], errs[i], answerOf(fmt.Sprintf("question %d", i)))
		}
	}
	if got := len(srv.Batches()); got != 1 {
		t.Errorf("batches created = %d, want 1", got)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 0 {
		t.Errorf("live chat calls = %d, want 0", got)
	}
	u := acct.Snapshot().Total
	live := prices.Cost("fake-chat", int(u.PromptTokens), int(u.CompletionTokens))
	if u.BatchRequests != 40 || u.Requests != 40 || u.Batches != 1 {
		t.Errorf("usage = %+v, want 40 batch requests in 1 batch", u)
	}
	if d := u.Cost - live/2; d > 1e-12 || d < -1e-12 || u.BatchSavedCost <= 0 {
		t.Errorf("cost %.8f, want half of live %.8f; saved %.8f", u.Cost, live, u.BatchSavedCost)
	}

	// Same questions, a new client on the same store: all from the cache.
	c2 := batchClient(t, srv, cache, nil, nil)
	again, errs := askAll(t, context.Background(), c2, 40)
	for i := range again {
		if errs[i] != nil || again[i] != answers[i] {
			t.Fatalf("cached answer %d = %q, %v", i, again[i], errs[i])
		}
	}
	if got := len(srv.Batches()); got != 1 {
		t.Errorf("batches after the re-run = %d, want still 1", got)
	}
}

// TestBatchExpiredFallsBackLive: a batch that expires half done leaves the
// other half to live requests, with the same answers.
func TestBatchExpiredFallsBackLive(t *testing.T) {
	srv := scripted(t)
	srv.ExpireBatches(true)
	c := batchClient(t, srv, llmtest.NewMemCache(), nil, nil)
	answers, errs := askAll(t, context.Background(), c, 10)
	for i := range answers {
		if errs[i] != nil || answers[i] != answerOf(fmt.Sprintf("question %d", i)) {
			t.Fatalf("answer %d = %q, %v", i, answers[i], errs[i])
		}
	}
	if b := srv.Batches(); len(b) != 1 || b[0].Status != "expired" {
		t.Fatalf("batches = %+v, want one expired", b)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 5 {
		t.Errorf("live calls = %d, want the 5 the batch did not answer", got)
	}
}

// TestBatchResumeAfterKill: the process dies while its batch is polled; the
// next run on the same store polls that batch and submits nothing new.
func TestBatchResumeAfterKill(t *testing.T) {
	srv := scripted(t)
	srv.BatchPolls(1 << 30) // never completes while the first client polls
	cache := llmtest.NewMemCache()
	ctx, kill := context.WithCancel(context.Background())
	first := batchClient(t, srv, cache, nil, func(c *llm.Config) { c.BatchPoll = time.Hour })
	done := make(chan struct{})
	go func() {
		defer close(done)
		askAll(t, ctx, first, 12)
	}()
	// The batch's id is recorded before its first poll: kill after that
	// poll reached the server (the minute is a hang guard).
	polled := func() bool {
		b := srv.Batches()
		return len(b) > 0 && srv.Calls("/v1/batches/"+b[0].ID) > 0
	}
	for deadline := time.Now().Add(time.Minute); !polled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if !polled() {
		t.Fatal("no batch was polled within a minute")
	}
	kill()
	<-done
	if len(srv.Batches()) != 1 {
		t.Fatalf("batches before the re-run = %d, want 1", len(srv.Batches()))
	}

	srv.BatchPolls(2)
	second := batchClient(t, srv, cache, nil, nil)
	answers, errs := askAll(t, context.Background(), second, 12)
	for i := range answers {
		if errs[i] != nil || answers[i] != answerOf(fmt.Sprintf("question %d", i)) {
			t.Fatalf("answer %d = %q, %v", i, answers[i], errs[i])
		}
	}
	if got := len(srv.Batches()); got != 1 {
		t.Errorf("batches after resuming = %d, want exactly 1", got)
	}
	if got := srv.Calls("/v1/chat/completions"); got != 0 {
		t.Errorf("live calls = %d, want 0", got)
	}
}

// TestBatchDir: with batch_dir the input file is what an offline runner
// (vLLM's run_batch) reads; its output file answers the requests.
func TestBatchDir(t *testing.T) {
	srv := scripted(t) // never asked: the directory is the endpoint
	dir := t.TempDir()
	c := batchClient(t, srv, llmtest.NewMemCache(), nil, func(c *llm.Config) { c.BatchDir = dir })
	// The offline runner: answers every pending input file.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			pending, _ := llm.BatchPending(dir)
			for _, in := range pending {
				runOffline(t, in)
			}
		}
	}()
	answers, errs := askAll(t, context.Background(), c, 6)
	for i := range answers {
		if errs[i] != nil || answers[i] != answerOf(fmt.Sprintf("question %d", i)) {
			t.Fatalf("answer %d = %q, %v", i, answers[i], errs[i])
		}
	}
	if srv.Calls("/v1/chat/completions")+srv.Calls("/v1/batches") != 0 {
		t.Errorf("the HTTP endpoint was used")
	}
}

// runOffline plays vLLM's run_batch: one output line per input line.
func runOffline(t *testing.T, in string) {
	data, err := os.ReadFile(in)
	if err != nil {
		return
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var l struct {
			CustomID string `json:"custom_id"`
			URL      string `json:"url"`
			Body     struct {
				Model    string `json:"model"`
				Messages []struct{ Role, Content string }
			} `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.URL != "/v1/chat/completions" {
			t.Errorf("bad batch line %q: %v", sc.Text(), err)
			return
		}
		q := l.Body.Messages[len(l.Body.Messages)-1].Content
		line, _ := json.Marshal(map[string]any{"id": "x", "custom_id": l.CustomID, "error": nil,
			"response": map[string]any{"status_code": 200, "body": map[string]any{"model": l.Body.Model,
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]string{"role": "assistant", "content": answerOf(q)}}},
				"usage": map[string]int{"prompt_tokens": 3, "completion_tokens": 4}}}})
		out.Write(append(line, '\n'))
	}
	os.WriteFile(strings.TrimSuffix(in, ".jsonl")+".output.jsonl", out.Bytes(), 0o644)
}

// TestBatchStageFillsOneBatch: a batch-mode stage's items all wait in one
// batch, not in batches of the stage's concurrency (issue 32: 20 items made
// 3 batches). The batch is sent when batch_size requests are pending; the
// window is an hour, so only the size can send it.
func TestBatchStageFillsOneBatch(t *testing.T) {
	llmtest.ClearEnv(t)
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply { return llmtest.Reply{Text: answerOf(c.LastUser())} })
	file, dir := writeRun(t, 20, `
inputs: [{path: q.jsonl}]
model: {base_url: `+srv.URL+`, model: base-model, batch: true, batch_size: 20, batch_window: 1h, batch_poll: 5ms}
stages:
  - {stage: llm-batch-ask, name: ask, concurrency: 2}
outputs: [{path: $DIR/out.jsonl}]
`)
	cfg, err := pipeline.Load(file, filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	// Only a regression waits: then the hour-long window would hold every
	// batch of 2; the deadline turns that into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	m, err := pipeline.Run(ctx, cfg, pipeline.RunOptions{})
	if err != nil {
		t.Fatalf("run: %v (batches created: %d)", err, srv.Calls("/v1/batches"))
	}
	if c := m.Stages[0].Counts; c.Out != 20 {
		t.Fatalf("stage out %d, want 20", c.Out)
	}
	if n := srv.Calls("/v1/batches"); n != 1 {
		t.Errorf("%d batches created for 20 items of a stage with concurrency 2, want 1", n)
	}
	if n := srv.Calls("/v1/chat/completions"); n != 0 {
		t.Errorf("%d live calls, want every answer from the batch", n)
	}
}

// batchAsk is a model stage (it says so: UsesModel) answering each query.
type batchAsk struct{ svc *pipeline.Services }

func (b batchAsk) UsesModel() bool { return true }

func (b batchAsk) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	chat, err := llm.ForStage(b.svc, "")
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	r, err := chat.Chat(ctx, llm.Request{Messages: []llm.Message{llm.User(q.Text)}})
	if err != nil {
		return nil, err
	}
	q.Metadata = map[string]string{"answer": r.Text}
	out, err := pipeline.QueryItem(q)
	return []pipeline.Item{out}, err
}

func init() {
	pipeline.Register("llm-batch-ask", askOptions{}, func(o askOptions, svc *pipeline.Services) (batchAsk, error) {
		return batchAsk{svc}, nil
	})
}
