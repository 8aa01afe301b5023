package pipeline

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"reflect"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/store"
)

// Stage is a configured stage: a value whose methods do the stage's job. It
// must implement exactly one of EachStage (per item) and AllStage (whole
// set); every other capability is optional and found by type assertion, as
// database/sql/driver finds a driver's optional interfaces: Versioner,
// Estimator, Observer, ExecutorUser, ModelUser and io.Closer. A stage knows its own job
// and nothing about caching, retries, progress, sharding or files: the engine
// wraps it with all of those.
//
// A new stage is one file:
//
//	type UpperOptions struct {
//		Suffix string `yaml:"suffix" json:"suffix"`
//	}
//
//	type upper struct{ o UpperOptions }
//
//	func (u upper) Version() any { return "upper-v1" }
//
//	func (u upper) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
//		q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
//		if err != nil {
//			return nil, pipeline.Permanent(err)
//		}
//		q.Text = strings.ToUpper(q.Text) + u.o.Suffix
//		out, err := pipeline.QueryItem(q)
//		return []pipeline.Item{out}, err
//	}
//
//	func init() {
//		pipeline.Register("upper", UpperOptions{Suffix: "!"}, func(o UpperOptions, svc *pipeline.Services) (upper, error) {
//			return upper{o}, nil
//		})
//	}
type Stage any

// EachStage is a per-item stage.
type EachStage interface {
	// Each processes one item and returns zero or more output items. It is
	// called concurrently (up to the stage's concurrency) and must be safe
	// for that. Its outputs are cached under a key of (stage name, settings,
	// Version, input item), so it must be a function of those: anything else
	// that changes the result belongs in Version or the settings.
	//
	// Errors: the engine decides what to retry (see RetryPolicy): an error
	// that says it is transient (Transient(err), or a `Transient() bool`
	// method on any error in its chain, as model errors have) is retried with
	// backoff up to the stage's retry limit; Permanent(err) is cached as a
	// known failure (not retried until the key changes or --force); any other
	// error fails the item for this run without caching. Failed items go to
	// the dead-letter file, are never written to the output, and never abort
	// the run; uncached failures are retried by the next run.
	Each(ctx context.Context, in Item) ([]Item, error)
}

// AllStage is a whole-set stage (pack, dedup, audit).
type AllStage interface {
	// All processes the whole input set. in yields the stage's input in
	// order, streamed from disk, and may be ranged over only once; emit
	// writes one output item and returns an error only when the run is
	// cancelled. An error from All fails the whole stage (the run stops
	// after it; earlier stages' outputs stay). The outputs are cached under a
	// key of (stage name, settings, Version, hash of all inputs).
	All(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error
}

// Versioner is implemented by stages whose outputs depend on more than their
// decoded settings: prompt texts (not just their names), template versions,
// model parameters filled from defaults. Version is JSON-encoded into the
// cache key.
type Versioner interface{ Version() any }

// Observer is implemented by stages that fill whole-output statistics (score
// histograms, outcome counts) in Services.Stats: Observe is called once per
// output item, cached or fresh, in output order from one goroutine, even
// when nothing was recomputed.
type Observer interface{ Observe(out Item) }

// Checker is implemented by stages with a quality gate over their whole
// output: Check runs after every output was observed (cached or fresh) and
// before the completion marker is written. An error fails the stage loudly
// (the run stops and exits non-zero with it, naming the gate and samples)
// and no marker is written, so the next run checks again.
type Checker interface{ Check() error }

// ExecutorUser is implemented by stages that run code in the sandbox. When
// UsesExecutor reports true, the identity of the run's opened executor
// (driver, image with digest, default limits) is part of the stage's cache
// key, so switching driver, image or a limit recomputes the stage.
type ExecutorUser interface{ UsesExecutor() bool }

// EachFunc is a per-item stage that is just a function (like
// http.HandlerFunc), for stages with no other capability.
type EachFunc func(ctx context.Context, in Item) ([]Item, error)

// Each implements EachStage.
func (f EachFunc) Each(ctx context.Context, in Item) ([]Item, error) { return f(ctx, in) }

// AllFunc is a whole-set stage that is just a function.
type AllFunc func(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error

// All implements AllStage.
func (f AllFunc) All(ctx context.Context, in iter.Seq2[Item, error], emit func(Item) error) error {
	return f(ctx, in, emit)
}

// stageCaps is a built stage with its capabilities found once.
type stageCaps struct {
	each      EachStage
	all       AllStage
	version   any
	estimate  Estimator
	observe   Observer
	check     Checker
	gated     Gated
	bypass    Bypasser
	executes  bool
	usesModel bool
	closer    io.Closer
}

// capsOf finds st's capabilities; name is for the error.
func capsOf(name string, st Stage) (*stageCaps, error) {
	c := &stageCaps{}
	c.each, _ = st.(EachStage)
	c.all, _ = st.(AllStage)
	if v := reflect.ValueOf(st); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) || (c.each == nil) == (c.all == nil) {
		return nil, fmt.Errorf("pipeline: stage %s must implement exactly one of EachStage and AllStage (%T)", name, st)
	}
	if v, ok := st.(Versioner); ok {
		c.version = v.Version()
	}
	c.estimate, _ = st.(Estimator)
	c.observe, _ = st.(Observer)
	c.check, _ = st.(Checker)
	c.gated, _ = st.(Gated)
	c.bypass, _ = st.(Bypasser)
	if u, ok := st.(ExecutorUser); ok {
		c.executes = u.UsesExecutor()
	}
	if u, ok := st.(ModelUser); ok {
		c.usesModel = u.UsesModel()
	}
	c.closer, _ = st.(io.Closer)
	return c, nil
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
	// ExecutorURL is that executor's URL as the pipeline file gives it, for
	// a stage that must open a variant of it (another image) itself.
	ExecutorURL string
	// Model is the run's model service, built by the service builder
	// registered for the pipeline file's top-level `model:` section (see
	// RegisterService), or nil when absent. Stages get their client from it
	// with llm.ForStage and put ModelKey into their Version.
	Model ModelService
	// Embedder is the shared embedding service from the `embedder:` section
	// (an *embed.Service), or nil; stages get their embedder from it with
	// embed.ForStage.
	Embedder EmbedService
	// Stats is this stage's free-form statistics, written to the manifest.
	Stats *Stats
	// RunDir is the run directory (for stages that keep side files).
	RunDir string
	// Name is the stage's instance name in the pipeline file.
	Name string

	progress *progress  // the running whole-set stage's display
	units    *unitRules // the stage's retry rules, for Retry and Failures (call.go)
}

// Phase shows what a whole-set stage is doing now ("embedding", "searching
// neighbours", "answering 120 dialogues") in the progress display, which
// otherwise only knows that the stage has read its input. Safe to call from
// any stage at any time; outside a whole-set run it does nothing.
func (s *Services) Phase(name string) {
	if s != nil {
		s.progress.setPhase(name)
	}
}

// ModelService is the engine's view of the model service: enough for a
// stage's cache key. The llm package's service implements it (and more,
// which stages reach through llm.ForStage).
type ModelService interface {
	// KeyParams returns the settings of the endpoint stage would use for
	// endpoint ("" = the stage's default) that change answers (model name,
	// temperature, seed, max tokens, JSON mode), to be JSON-encoded into a
	// cache key.
	KeyParams(stage, endpoint string) (any, error)
}

// BatchSizer is implemented by model services that can send a stage's
// requests through a provider's batch API: BatchSize is how many requests
// one batch may hold for that stage, or 0 when its requests go live. The
// engine then keeps up to that many of the stage's items in flight (not
// just its concurrency), so a batch holds every item that is ready.
type BatchSizer interface{ BatchSize(stage string) int }

// workers is how many items of a per-item stage run at once: its
// concurrency, or for a model stage in batch mode as many as one batch
// holds (at most the stage's item count).
func (r *runner) workers(s *StageSpec, st *stageCaps, total int64) int {
	n := s.Concurrency
	if bs, ok := r.model.(BatchSizer); ok && st.usesModel {
		if b := bs.BatchSize(s.Name); b > 0 {
			n = max(n, int(min(int64(b), total)))
		}
	}
	return n
}

// ModelKey returns what of the model endpoint this stage uses ("" = its
// default) belongs in the stage's Version: the endpoint's KeyParams, or
// "none" when the run has no model service.
func (s *Services) ModelKey(endpoint string) (any, error) {
	if s.Model == nil {
		return "none", nil
	}
	return s.Model.KeyParams(s.Name, endpoint)
}

// Factory builds a stage from its decoded settings. O is the stage's own
// options struct; its fields carry `yaml` tags for the pipeline file and
// `json` tags for the cache key and manifest. It runs at validate time too
// (with a Services whose Executor, Model and Embedder may be nil), so it must
// not do expensive work; it should reject bad settings with an error.
type Factory[O any, S Stage] func(opts O, svc *Services) (S, error)

// Validator is implemented by options structs that check their own values;
// validate and run call it after decoding.
type Validator interface{ Validate() error }
