package pack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/pipeline/pipelinetest"
	"github.com/codefeedback/codefeedback/schema"
)

// packAnswerRun runs pack with answer: true over stageQueries in dir (the
// run directory is kept between calls) and returns the manifest, the
// published items and the run's error.
func packAnswerRun(t *testing.T, dir, url string, retries int) (*pipeline.Manifest, []pipeline.Item, error) {
	t.Helper()
	pipelinetest.WriteQueries(t, filepath.Join(dir, "q.jsonl"), stageQueries)
	out := filepath.Join(dir, "out.items.jsonl")
	os.Remove(out)
	y := fmt.Sprintf(`inputs: [{path: q.jsonl}]
model: {base_url: %s, model: writer-1}
stages:
  - {stage: pack, retries: %d, settings: {sizes: [2], floor: 0.2, answer: true}}
outputs: [{path: %s, format: items}]
`, url, retries, out)
	cfg := pipelinetest.Load(t, dir, "run_dir: "+filepath.Join(dir, "run")+"\n"+y)
	m, err := pipeline.Run(context.Background(), cfg, pipeline.RunOptions{Retry: pipeline.RetryPolicy{Base: time.Millisecond, Max: time.Millisecond}})
	if err != nil {
		return m, nil, err
	}
	items := pipelinetest.Items(t, out)
	return m, items, nil
}

// answered counts the dialogues with an assistant turn for every user turn.
func answered(t *testing.T, items []pipeline.Item) (answeredN, unanswered int) {
	ds, _ := dialogues(t, items)
	for _, d := range ds {
		users, assistants := 0, 0
		for _, m := range d.Messages {
			switch m.Role {
			case schema.RoleUser:
				users++
			case schema.RoleAssistant:
				assistants++
			}
		}
		if users > 0 && users == assistants && d.Method == "packed-answered" {
			answeredN++
		} else {
			unanswered++
		}
	}
	return answeredN, unanswered
}

func writerServer(t *testing.T) *llmtest.Server {
	srv := llmtest.New(t)
	srv.Script(func(c llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "Here it is:\n```python\nprint(1)\n```"}
	})
	return srv
}

// TestPackAnswerRetriesTransient: one 429 with retries is retried by the
// engine's rules; both dialogues are answered.
func TestPackAnswerRetriesTransient(t *testing.T) {
	clearEnv(t)
	srv := writerServer(t)
	srv.FailNext(llmtest.Fault{Kind: llmtest.Status, Status: 429})
	m, items, err := packAnswerRun(t, t.TempDir(), srv.URL, 3)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	got, gaps := answered(t, items)
	if got != 2 || gaps != 0 {
		t.Errorf("got %d answered and %d unanswered dialogues, want 2 and 0", got, gaps)
	}
	st := m.Stages[0]
	if st.Status != "ran" || st.Stats["answered"] != 2 || st.Stats["retries"] != 1 || st.Stats["answer_failed"] != 0 {
		t.Errorf("stage %s stats %v, want ran with answered 2, retries 1", st.Status, st.Stats)
	}
}

// TestPackAnswerExhaustedIsDeadLetter: 429s past the retries fail the
// dialogue: the stage fails with a dead letter instead of caching an
// unanswered dialogue, and the next run answers it. With retries: 1 and
// three 429s on the first requests exactly one dialogue fails: the first
// two requests are the two dialogues' first turns, the third is a retry.
// (retries: 0 in a pipeline file currently means the default, 3.)
func TestPackAnswerExhaustedIsDeadLetter(t *testing.T) {
	clearEnv(t)
	srv := writerServer(t)
	dir := t.TempDir()
	f := llmtest.Fault{Kind: llmtest.Status, Status: 429}
	srv.FailNext(f, f, f)
	m, _, err := packAnswerRun(t, dir, srv.URL, 1)
	if !errors.Is(err, pipeline.ErrUnitsFailed) {
		t.Fatalf("run error %v, want ErrUnitsFailed", err)
	}
	if st := m.Stages[0]; st.Status != "failed" || st.Stats["answer_failed"] != 1 || st.Stats["answered"] != 1 || st.Stats["retries"] != 2 {
		t.Errorf("stage %s stats %v, want failed with answer_failed 1, answered 1, retries 2", st.Status, st.Stats)
	}
	raw, rerr := os.ReadFile(filepath.Join(dir, "run", "stages", "pack", "dead-letters.jsonl"))
	if rerr != nil {
		t.Fatalf("dead letters: %v", rerr)
	}
	var dl struct {
		Stage    string `json:"stage"`
		ItemID   string `json:"item_id"`
		Error    string `json:"error"`
		Attempts int    `json:"attempts"`
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 1 {
		t.Fatalf("got %d dead letters, want 1:\n%s", len(lines), raw)
	}
	json.Unmarshal([]byte(lines[0]), &dl)
	if dl.Stage != "pack" || !strings.HasPrefix(dl.ItemID, "dlg-") || dl.Attempts != 2 || !strings.Contains(dl.Error, "429") {
		t.Errorf("dead letter %+v, want pack's dialogue after 2 attempts with the 429", dl)
	}
	before := srv.Calls("/v1/chat/completions")
	m, items, err := packAnswerRun(t, dir, srv.URL, 1)
	if err != nil {
		t.Fatalf("re-run: %v", err)
	}
	got, gaps := answered(t, items)
	if got != 2 || gaps != 0 || m.Stages[0].Status != "ran" {
		t.Errorf("re-run: %s with %d answered and %d unanswered dialogues, want ran, 2 and 0", m.Stages[0].Status, got, gaps)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "stages", "pack", "dead-letters.jsonl")); !os.IsNotExist(err) {
		t.Errorf("the dead letters of the failed run are still there after the re-run answered them (stat: %v)", err)
	}
	// The answered dialogue's two turns come from the cache: only the
	// failed dialogue's two turns are asked again.
	if n := srv.Calls("/v1/chat/completions") - before; n != 2 {
		t.Errorf("re-run made %d chat requests, want 2 (the failed dialogue's turns)", n)
	}
}
