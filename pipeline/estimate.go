package pipeline

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
)

// Shape is what a --dry-run estimate knows of an item: enough to count the
// model calls a stage would make for it and the size of their prompts,
// without the item itself (a stage downstream of an uncached one sees only
// predicted shapes).
type Shape struct {
	Kind string
	// Bytes is the text a prompt about the item carries: a query's or
	// problem's text, a dialogue's messages.
	Bytes int
	// Tested is a problem with tests (the tests judge it, not a model).
	Tested bool
	// UserTurns and CodeTurns count a dialogue's requests (user messages
	// that are neither an execution result nor feedback) and its assistant
	// messages holding a code block.
	UserTurns, CodeTurns int
	// ExplainedTurns of the CodeTurns already open with prose that explains
	// their code (explain adds no preface to those).
	ExplainedTurns int
}

// ownProseChars is how much prose before a turn's first code block counts
// as the turn's own explanation in an estimate (explain.Explained also
// checks that the prose names the code).
const ownProseChars = 120

// ShapeOf reads an item's shape from its record.
func ShapeOf(it Item) Shape {
	var r struct {
		Text     string   `json:"text"`
		Tests    []string `json:"tests"`
		Messages []struct {
			Role, Content  string
			Exec, Feedback json.RawMessage
		} `json:"messages"`
	}
	sh := Shape{Kind: it.Kind}
	if json.Unmarshal(it.Data, &r) != nil {
		sh.Bytes = len(it.Data)
		return sh
	}
	sh.Bytes = len(r.Text)
	for _, t := range r.Tests {
		sh.Bytes += len(t)
	}
	sh.Tested = len(r.Tests) > 0
	for _, m := range r.Messages {
		sh.Bytes += len(m.Content)
		switch {
		case m.Role == "assistant" && strings.Contains(m.Content, "```"):
			sh.CodeTurns++
			if i := strings.Index(m.Content, "```"); len(strings.TrimSpace(m.Content[:i])) >= ownProseChars {
				sh.ExplainedTurns++
			}
		case m.Role == "user" && len(m.Exec) == 0 && len(m.Feedback) == 0:
			sh.UserTurns++
		}
	}
	return sh
}

func shapeOfLine(data []byte) Shape {
	var it Item
	if json.Unmarshal(data, &it) != nil {
		return Shape{Bytes: len(data)}
	}
	return ShapeOf(it)
}

// Estimator is implemented by stages that can predict, for --dry-run, the
// model usage of computing the items of these shapes (calls and tokens; the
// engine prices them) and the shapes of what they would output, so that
// the stages after an uncached one are estimated too. A stage without it
// is taken to pass its inputs through and call no model.
type Estimator interface {
	Estimate(in []Shape) (Usage, []Shape)
}

// Pricer is implemented by a model service that prices a stage's estimated
// usage from the run's price table: live, through a provider batch, and
// whether the stage's endpoint batches.
type Pricer interface {
	EstimateCost(stage string, promptTokens, completionTokens int64) (live, batch float64, batched bool)
}

// Estimate is a stage's --dry-run prediction: its model usage (CostUSD at
// the price the run would pay: batch when the stage's endpoint batches) and
// that usage priced both ways.
type Estimate struct {
	Usage
	LiveCostUSD  float64 `json:"live_cost_usd"`
	BatchCostUSD float64 `json:"batch_cost_usd"`
	Batched      bool    `json:"batched,omitempty"`
	// Predicted is set when the stage's inputs were themselves predicted
	// (an uncached stage comes before it).
	Predicted bool `json:"predicted,omitempty"`
}

// estimate fills rec.Estimate from the shapes of the items the stage would
// compute (todo) and keeps the predicted shapes of its whole output (from
// all its inputs) for the stages after it. predicted says whether the
// inputs are predictions.
func (r *runner) estimate(s *StageSpec, st *stageCaps, rec *StageRecord, all, todo []Shape, predicted bool) {
	var u Usage
	out := all
	if st.estimate != nil {
		u, _ = st.estimate.Estimate(todo)
		_, out = st.estimate.Estimate(all)
	}
	e := &Estimate{Usage: u, Predicted: predicted}
	if p, ok := r.model.(Pricer); ok && st.usesModel {
		e.LiveCostUSD, e.BatchCostUSD, e.Batched = p.EstimateCost(s.Name, u.PromptTokens, u.CompletionTokens)
		e.CostUSD = e.LiveCostUSD
		if e.Batched {
			e.CostUSD = e.BatchCostUSD
		}
	}
	if st.estimate != nil || u.Requests > 0 {
		rec.Estimate = e
	}
	r.shapes[s.Name] = out
}

// inputShapes returns the shapes of every input item of s: predicted ones
// for an input stage that would run first, else those of its output file.
// ok is false when an input is neither.
func (r *runner) inputShapes(s *StageSpec) (shapes []Shape, predicted, ok bool) {
	for _, src := range s.Input {
		if sh, found := r.shapes[src]; found {
			shapes = append(shapes, sh...)
			predicted = true
			continue
		}
		m := r.done[src]
		if m == nil {
			return nil, false, false
		}
		path := filepath.Join(r.outDir, m.Output)
		if !fileExists(path) {
			path = filepath.Join(r.dir, m.Output)
		}
		for ln, err := range outputLines(context.Background(), r.db, path) {
			if err != nil {
				return nil, false, false
			}
			shapes = append(shapes, shapeOfLine(ln.data))
		}
	}
	return shapes, predicted, true
}

// add returns e + o; nil is zero.
func (e *Estimate) add(o *Estimate) *Estimate {
	if o == nil {
		return e
	}
	if e == nil {
		e = &Estimate{}
	}
	return &Estimate{Usage: e.Usage.Add(o.Usage), LiveCostUSD: e.LiveCostUSD + o.LiveCostUSD,
		BatchCostUSD: e.BatchCostUSD + o.BatchCostUSD, Batched: e.Batched || o.Batched, Predicted: e.Predicted || o.Predicted}
}

// Calls is the usage of n model calls whose prompts hold promptBytes each
// (counted as bytes/4 tokens, as the model client estimates) and whose
// answers run to completionTokens each.
func Calls(n, promptBytes, completionTokens int) Usage {
	var t Tally
	t.Add(float64(n), promptBytes, completionTokens)
	return t.Usage()
}

// Tally adds up expected calls, which may be fractional (a fix needed by
// one answer in three), and rounds once at the end.
type Tally struct{ calls, prompt, completion float64 }

// Add counts n expected calls with prompts of promptBytes and answers of
// completionTokens each.
func (t *Tally) Add(n float64, promptBytes, completionTokens int) {
	if n <= 0 {
		return
	}
	t.calls += n
	t.prompt += n * float64(promptBytes) / 4
	t.completion += n * float64(completionTokens)
}

// Usage returns the rounded total.
func (t *Tally) Usage() Usage {
	return Usage{Requests: int64(math.Round(t.calls)), PromptTokens: int64(math.Round(t.prompt)), CompletionTokens: int64(math.Round(t.completion))}
}

// TemplateBytes returns the size of the named templates (a prompt's fixed
// part) as found by get, for estimators; unknown names count 0.
func TemplateBytes(get func(string) (string, error), names ...string) int {
	n := 0
	for _, name := range names {
		if t, err := get(name); err == nil {
			n += len(t)
		}
	}
	return n
}
