package pipeline

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"sort"
	"sync"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/store"
)

// Stage is what a stage factory returns. Exactly one of Each and All is set.
// A stage knows its own job and nothing about caching, retries, progress,
// sharding or files: the engine wraps it with all of those.
//
// A new stage is one file:
//
//	type UpperOptions struct {
//		Suffix string `yaml:"suffix" json:"suffix"`
//	}
//
//	func init() {
//		pipeline.Register("upper", UpperOptions{Suffix: "!"}, func(o UpperOptions, svc *pipeline.Services) (*pipeline.Stage, error) {
//			return &pipeline.Stage{
//				Version: "upper-v1",
//				Each: func(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
//					q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
//					if err != nil {
//						return nil, pipeline.Permanent(err)
//					}
//					q.Text = strings.ToUpper(q.Text) + o.Suffix
//					out, err := pipeline.QueryItem(q)
//					return []pipeline.Item{out}, err
//				},
//			}, nil
//		})
//	}
type Stage struct {
	// Each processes one item and returns zero or more output items. It is
	// called concurrently (up to the stage's concurrency) and must be safe
	// for that. Its outputs are cached under a key of (stage name, settings,
	// Version, input item), so it must be a function of those: anything else
	// that changes the result belongs in Version or the settings.
	//
	// Errors: Transient(err) is retried with backoff up to the stage's retry
	// limit; Permanent(err) is cached as a known failure (not retried until
	// the key changes or --force); any other error fails the item for this
	// run without caching. Failed items go to the dead-letter file, are never
	// written to the output, and never abort the run; uncached failures are
	// retried by the next run.
	Each func(ctx context.Context, in Item) ([]Item, error)

	// All processes the whole input set (pack, dedup, audit). in yields the
	// stage's input in order, streamed from disk, and may be ranged over only
	// once; emit writes one output item and returns an error only when the
	// run is cancelled. An error from All fails the whole stage (the run
	// stops after it; earlier stages' outputs stay). The outputs are cached
	// under a key of (stage name, settings, Version, hash of all inputs).
	All func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error

	// Version is everything beyond the decoded settings that changes the
	// stage's outputs: prompt texts (not just their names), template
	// versions, model parameters filled from defaults. It is JSON-encoded
	// into the cache key; nil is fine for stages with none.
	Version any

	// Estimate, if set, predicts the model usage of running n uncached items,
	// for --dry-run.
	Estimate func(n int) Usage

	// Observe, if set, is called once per output item, cached or fresh, in
	// output order from one goroutine, so a stage can fill whole-output
	// statistics (score histograms, outcome counts) in Services.Stats even
	// when nothing was recomputed.
	Observe func(out Item)

	// Close, if set, releases the stage's resources after it has run.
	Close func() error
}

// Services are what a stage factory gets besides its settings. One Services
// value is built per stage; the shared parts (Cache, Executor, Model,
// Embedder) are the same object for every stage of a run.
type Services struct {
	// Logger is the stage's logger (with a "stage" attribute).
	Logger *slog.Logger
	// Cache is the run directory's content-addressed store, for model
	// requests and sandbox executions (buckets "llm", "exec", ...). Entries
	// touched through it are kept by `cache gc`.
	Cache store.Cache
	// Executor is the sandbox from the pipeline file's `executor:` URL, or nil
	// when the file names none. Opened lazily: a stage that does not call it
	// costs nothing.
	Executor func(ctx context.Context) (executors.Executor, error)
	// Model and Embedder are the shared clients built by the service
	// builders registered for the pipeline file's top-level `model:` and
	// `embedder:` sections (see RegisterService), or nil when absent. They are
	// typed any so the engine does not depend on the llm/embed packages;
	// use ServiceAs to get the interface a stage needs.
	Model    any
	Embedder any
	// Stats is this stage's free-form statistics, written to the manifest.
	Stats *Stats
	// RunDir is the run directory (for stages that keep side files).
	RunDir string
	// Name is the stage's instance name in the pipeline file.
	Name string
}

// ServiceAs returns v as T, or an error naming what is missing. Typical use:
//
//	m, err := pipeline.ServiceAs[llm.Chatter](svc.Model, "model")
func ServiceAs[T any](v any, what string) (T, error) {
	t, ok := v.(T)
	if !ok {
		var zero T
		if v == nil {
			return zero, fmt.Errorf("pipeline: this stage needs a %s; add a top-level `%s:` section to the pipeline file", what, what)
		}
		return zero, fmt.Errorf("pipeline: the %s is a %T, which does not implement %s", what, v, reflect.TypeFor[T]())
	}
	return t, nil
}

// Factory builds a stage from its decoded settings. O is the stage's own
// options struct; its fields carry `yaml` tags for the pipeline file and
// `json` tags for the cache key and manifest. It runs at validate time too
// (with a Services whose Executor, Model and Embedder may be nil), so it must
// not do expensive work; it should reject bad settings with an error.
type Factory[O any] func(opts O, svc *Services) (*Stage, error)

// Validator is implemented by options structs that check their own values;
// validate and run call it after decoding.
type Validator interface{ Validate() error }

type registered struct {
	name     string
	defaults func() reflect.Value // pointer to a fresh copy of the defaults
	build    func(opts any, svc *Services) (*Stage, error)
}

var (
	regMu  sync.Mutex
	stages = map[string]registered{}
)

// Register makes a stage type available to pipeline files under name.
// defaults holds the option values used where the file leaves a key out.
// Call it from init; registering a name twice panics.
func Register[O any](name string, defaults O, f Factory[O]) {
	if reflect.TypeFor[O]().Kind() != reflect.Struct {
		panic("pipeline: options of stage " + name + " must be a struct")
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := stages[name]; dup {
		panic("pipeline: stage registered twice: " + name)
	}
	stages[name] = registered{
		name: name,
		defaults: func() reflect.Value {
			p := reflect.New(reflect.TypeFor[O]())
			p.Elem().Set(reflect.ValueOf(defaults))
			return p
		},
		build: func(opts any, svc *Services) (*Stage, error) {
			st, err := f(*(opts.(*O)), svc)
			if err != nil {
				return nil, err
			}
			if st == nil || (st.Each == nil) == (st.All == nil) {
				return nil, fmt.Errorf("pipeline: stage %s must set exactly one of Each and All", name)
			}
			return st, nil
		},
	}
}

// Stages lists the registered stage names.
func Stages() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, 0, len(stages))
	for n := range stages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupStage(name string) (registered, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	r, ok := stages[name]
	return r, ok
}

// ServiceBuilder builds a shared service (model client, embedder) from its
// top-level section of the pipeline file. decode decodes the section into a
// struct strictly (unknown keys are errors with file:line). cache is the run's
// store; nil at validate time, when the builder must only check settings and
// may return a nil service.
type ServiceBuilder func(decode func(v any) error, cache store.Cache) (any, error)

var services = map[string]ServiceBuilder{}

// RegisterService registers the builder for a top-level section: "model"
// fills Services.Model, "embedder" fills Services.Embedder. The llm and embed
// packages call it from init.
func RegisterService(section string, b ServiceBuilder) {
	if section != "model" && section != "embedder" {
		panic("pipeline: unknown service section " + section)
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := services[section]; dup {
		panic("pipeline: service registered twice: " + section)
	}
	services[section] = b
}

func lookupService(section string) (ServiceBuilder, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	b, ok := services[section]
	return b, ok
}

// transientError and permanentError classify a stage's item errors.
type transientError struct{ err error }

func (e transientError) Error() string { return e.err.Error() }
func (e transientError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Transient marks err as worth retrying (rate limit, timeout, connection
// reset). Errors that implement `Temporary() bool` or `Transient() bool`
// returning true count as transient too.
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return transientError{err}
}

// Permanent marks err as a deterministic failure of this item: the same input
// and settings would fail the same way, so the failure is cached.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsTransient reports whether err is marked transient.
func IsTransient(err error) bool {
	var t transientError
	if errors.As(err, &t) {
		return true
	}
	var tr interface{ Transient() bool }
	if errors.As(err, &tr) && tr.Transient() {
		return true
	}
	var tmp interface{ Temporary() bool }
	if errors.As(err, &tmp) && tmp.Temporary() {
		return true
	}
	return errors.Is(err, context.DeadlineExceeded)
}

// IsPermanent reports whether err is marked permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

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

// budget is the run-wide --max-cost guard.
type budget struct {
	mu    sync.Mutex
	limit float64 // 0 = unlimited
	spent float64
}

func (b *budget) charge(usd float64) {
	b.mu.Lock()
	b.spent += usd
	b.mu.Unlock()
}

func (b *budget) exceeded() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit > 0 && b.spent >= b.limit
}
