package llm

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/pipeline"
)

// ErrBudgetExceeded is returned (wrapped) by every call once the run's cost
// reached Accountant.MaxCost. The engine treats it as "stop cleanly": the
// item is not a failure of the item, the run ends. Calls already in flight
// when the budget is reached complete, so a run may overshoot by at most
// Concurrency calls.
// It is pipeline.ErrBudgetExceeded, so the engine sees it without
// importing this package.
var ErrBudgetExceeded = pipeline.ErrBudgetExceeded

// Price is what a model costs in dollars per million tokens.
type Price struct {
	InputPerM  float64 `json:"input_per_m" yaml:"input_per_m"`
	OutputPerM float64 `json:"output_per_m" yaml:"output_per_m"`
}

// Prices maps a model name to its price. A key ending in "*" matches model
// names by prefix (the longest prefix wins); a missing model costs 0.
type Prices map[string]Price

// Lookup returns the price of model and whether the table knows it.
func (p Prices) Lookup(model string) (Price, bool) {
	if pr, ok := p[model]; ok {
		return pr, true
	}
	best, found := -1, Price{}
	for k, pr := range p {
		if pre, ok := strings.CutSuffix(k, "*"); ok && strings.HasPrefix(model, pre) && len(pre) > best {
			best, found = len(pre), pr
		}
	}
	return found, best >= 0
}

// Cost returns the dollar cost of the given token counts for model.
func (p Prices) Cost(model string, prompt, completion int) float64 {
	pr, _ := p.Lookup(model)
	return (float64(prompt)*pr.InputPerM + float64(completion)*pr.OutputPerM) / 1e6
}

// Usage is the accounting of a stage or of the run.
type Usage struct {
	// Requests counts calls answered by the endpoint; CachedRequests calls
	// answered from the cache (free); Retries extra attempts; Failures calls
	// that returned an error.
	Requests       int64 `json:"requests"`
	CachedRequests int64 `json:"cached_requests"`
	Retries        int64 `json:"retries"`
	Failures       int64 `json:"failures"`
	// Token counts as reported by the endpoint (paid calls only).
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// Cost in dollars of the paid calls; SavedCost what cache hits would
	// have cost.
	Cost      float64 `json:"cost_usd"`
	SavedCost float64 `json:"saved_cost_usd"`
	// Batches submitted, requests answered by a batch (counted in Requests
	// too), and what those would have cost live minus what they cost.
	Batches        int64   `json:"batches,omitempty"`
	BatchRequests  int64   `json:"batch_requests,omitempty"`
	BatchSavedCost float64 `json:"batch_saved_cost_usd,omitempty"`
}

func (u *Usage) add(o Usage) {
	u.Requests += o.Requests
	u.CachedRequests += o.CachedRequests
	u.Retries += o.Retries
	u.Failures += o.Failures
	u.PromptTokens += o.PromptTokens
	u.CompletionTokens += o.CompletionTokens
	u.Cost += o.Cost
	u.SavedCost += o.SavedCost
	u.Batches += o.Batches
	u.BatchRequests += o.BatchRequests
	u.BatchSavedCost += o.BatchSavedCost
}

// Snapshot is a point-in-time copy of the accounting, for the run manifest
// and the progress line.
type Snapshot struct {
	Total   Usage            `json:"total"`
	Stages  map[string]Usage `json:"stages"`
	MaxCost float64          `json:"max_cost_usd,omitempty"`
	// BudgetExceeded is true once Total.Cost >= MaxCost > 0.
	BudgetExceeded bool `json:"budget_exceeded,omitempty"`
}

// String renders a one-line summary such as
// "llm 120 calls (30 cached, 2 retries, 0 failed) 45.1k tok $0.0312/$5.00".
func (s Snapshot) String() string {
	t := s.Total
	line := fmt.Sprintf("llm %d calls (%d cached, %d retries, %d failed) %s tok $%.4f",
		t.Requests+t.CachedRequests, t.CachedRequests, t.Retries, t.Failures,
		humanCount(t.PromptTokens+t.CompletionTokens), t.Cost)
	if s.MaxCost > 0 {
		line += fmt.Sprintf("/$%.2f", s.MaxCost)
	}
	return line
}

// StageNames returns the stage names in order.
func (s Snapshot) StageNames() []string {
	names := make([]string, 0, len(s.Stages))
	for n := range s.Stages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// Accountant keeps token usage and cost per stage for one run and enforces
// the budget. One Accountant is shared by every Client of a run; it is safe
// for concurrent use. A nil *Accountant is valid and accounts nothing.
type Accountant struct {
	prices  Prices
	maxCost float64

	mu     sync.Mutex
	stages map[string]*Usage
	total  Usage
}

// NewAccountant returns an Accountant using prices; maxCost <= 0 means no
// budget.
func NewAccountant(prices Prices, maxCost float64) *Accountant {
	return &Accountant{prices: prices, maxCost: maxCost, stages: map[string]*Usage{}}
}

// Prices returns the price table.
func (a *Accountant) Prices() Prices {
	if a == nil {
		return nil
	}
	return a.prices
}

// check returns ErrBudgetExceeded once the budget is spent.
func (a *Accountant) check() error {
	if a == nil || a.maxCost <= 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total.Cost >= a.maxCost {
		return fmt.Errorf("%w: spent $%.4f of $%.4f", ErrBudgetExceeded, a.total.Cost, a.maxCost)
	}
	return nil
}

func (a *Accountant) record(stage string, u Usage) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.stages[stage]
	if s == nil {
		s = new(Usage)
		a.stages[stage] = s
	}
	s.add(u)
	a.total.add(u)
}

// Snapshot returns a copy of the accounting so far.
func (a *Accountant) Snapshot() Snapshot {
	if a == nil {
		return Snapshot{Stages: map[string]Usage{}}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Snapshot{Total: a.total, Stages: make(map[string]Usage, len(a.stages)), MaxCost: a.maxCost}
	for n, u := range a.stages {
		s.Stages[n] = *u
	}
	s.BudgetExceeded = a.maxCost > 0 && a.total.Cost >= a.maxCost
	return s
}
