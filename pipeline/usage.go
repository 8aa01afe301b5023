package pipeline

import (
	"errors"
	"sync"
)

// Usage is model usage, reported by model clients into Stats.AddUsage and
// predicted by Stage.Estimate.
type Usage struct {
	Requests         int64   `json:"requests"`
	PromptTokens     int64   `json:"prompt_tokens"`
	CompletionTokens int64   `json:"completion_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	// BatchRequests of Requests were answered through a provider batch;
	// BatchSavedUSD is what they would have cost live minus CostUSD's share.
	BatchRequests int64   `json:"batch_requests,omitempty"`
	BatchSavedUSD float64 `json:"batch_saved_cost_usd,omitempty"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{Requests: u.Requests + v.Requests, PromptTokens: u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens, CostUSD: u.CostUSD + v.CostUSD,
		BatchRequests: u.BatchRequests + v.BatchRequests, BatchSavedUSD: u.BatchSavedUSD + v.BatchSavedUSD}
}

// Stats is a stage's free-form statistics, written to the run manifest under
// the stage's "stats" and read by the report. Safe for concurrent use. Keys
// are free-form; by convention histograms use "name/bucket" keys (e.g.
// "score/rubric_a/4") and usage goes through AddUsage.
type Stats struct {
	mu     sync.Mutex
	vals   map[string]float64
	usage  Usage
	budget *budget

	// An item recorder (see ItemStats) keeps its delta in vals (Add) and
	// sets (Set) and passes usage on to stage; vals is made on first use.
	item  bool
	sets  map[string]float64
	stage *Stats
	// rejects are what gates turned away (see Reject).
	rejects []Rejection
}

// NewStats returns empty stats (the engine makes one per stage).
func NewStats() *Stats { return &Stats{vals: map[string]float64{}} }

// Add adds d to the counter key. Add, Set and AddUsage on a nil *Stats do
// nothing.
func (s *Stats) Add(key string, d float64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.vals == nil {
		s.vals = map[string]float64{}
	}
	s.vals[key] += d
	s.mu.Unlock()
}

// Set sets key to v. In an item recorder, the set is applied to the stage's
// statistics when the item is done, in input order, so the last item (in
// input order) that sets a key wins, whether computed or cached.
func (s *Stats) Set(key string, v float64) {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.item {
		if s.sets == nil {
			s.sets = map[string]float64{}
		}
		s.sets[key] = v
	} else {
		s.vals[key] = v
	}
	s.mu.Unlock()
}

// AddUsage records model usage (tokens, cost) and charges the run's
// --max-cost budget; the engine stops dispatching new items once it is spent.
// An item recorder passes usage straight to the stage's statistics: it is
// money spent now, by every attempt, and is not replayed for cached items.
func (s *Stats) AddUsage(u Usage) {
	if s == nil {
		return
	}
	if s.item {
		if s.stage != nil {
			s.stage.AddUsage(u)
		}
		return
	}
	s.mu.Lock()
	s.usage = s.usage.Add(u)
	b := s.budget
	s.mu.Unlock()
	if b != nil {
		b.charge(u.CostUSD)
	}
}

// Snapshot returns a copy of the counters and usage.
func (s *Stats) Snapshot() (map[string]float64, Usage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]float64, len(s.vals))
	for k, v := range s.vals {
		m[k] = v
	}
	return m, s.usage
}

// ErrBudgetExceeded is wrapped by a service's error when the run's
// --max-cost is spent (the llm package's ErrBudgetExceeded is this error).
// An item failing with it is neither output nor dead-lettered, and the run
// stops cleanly with ErrStopped.
var ErrBudgetExceeded = errors.New("cost budget exceeded")

// budget is the run-wide --max-cost guard.
type budget struct {
	mu    sync.Mutex
	limit float64 // 0 = unlimited
	spent float64
	hit   bool // a service refused a call for lack of budget
}

// stop records that a service refused a call because the budget is spent.
func (b *budget) stop() {
	b.mu.Lock()
	b.hit = true
	b.mu.Unlock()
}

func (b *budget) charge(usd float64) {
	b.mu.Lock()
	b.spent += usd
	b.mu.Unlock()
}

func (b *budget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hit || (b.limit > 0 && b.spent >= b.limit)
}
