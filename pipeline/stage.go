package pipeline

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"reflect"

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
