package pipeline

import (
	"log/slog"
	"reflect"

	"github.com/codefeedback/codefeedback/internal/registry"
	"github.com/codefeedback/codefeedback/internal/store"
)

type registered struct {
	name     string
	defaults func() reflect.Value // pointer to a fresh copy of the defaults
	build    func(opts any, svc *Services) (*stageCaps, error)
}

var stageTypes = registry.Named[registered]{Kind: "pipeline: stage"}

// Register makes a stage type available to pipeline files under name.
// defaults holds the option values used where the file leaves a key out.
// Call it from init; registering a name twice panics.
//
// The factory may return its own stage type (tests can then call its
// methods directly); the engine finds its capabilities by type assertion.
func Register[O any, S Stage](name string, defaults O, f Factory[O, S]) {
	if reflect.TypeFor[O]().Kind() != reflect.Struct {
		panic("pipeline: options of stage " + name + " must be a struct")
	}
	stageTypes.Add(name, registered{
		name: name,
		defaults: func() reflect.Value {
			p := reflect.New(reflect.TypeFor[O]())
			p.Elem().Set(reflect.ValueOf(defaults))
			return p
		},
		build: func(opts any, svc *Services) (*stageCaps, error) {
			st, err := f(*(opts.(*O)), svc)
			if err != nil {
				return nil, err
			}
			return capsOf(name, st)
		},
	})
}

// Stages lists the registered stage names.
func Stages() []string { return stageTypes.Names() }

func lookupStage(name string) (registered, bool) { return stageTypes.Get(name) }

// ServiceEnv is what a service builder gets from the engine.
type ServiceEnv struct {
	// Decode decodes the service's section into a struct strictly (unknown
	// keys are errors with file:line).
	Decode func(v any) error
	// Cache is the run's store; nil at validate time, when the builder must
	// only check settings and may return a nil service.
	Cache store.Cache
	// Logger is the run's logger (what --verbose shows); never nil.
	Logger *slog.Logger
	// MaxCost is the run's --max-cost in USD (0 = unlimited): a model
	// service refuses calls once it is spent, with an error wrapping
	// ErrBudgetExceeded.
	MaxCost float64
	// EngineRetries is true in a pipeline run: the engine retries failed
	// items (RetryPolicy), so a client must not retry on its own; it makes
	// one attempt per call and says in its error whether the failure is
	// transient (a Transient() bool method, and RetryAfter() for a server's
	// hint).
	EngineRetries bool
}

// ServiceBuilder builds a shared service (model client, embedder) from its
// top-level section of the pipeline file.
type ServiceBuilder func(env ServiceEnv) (any, error)

var services = registry.Named[ServiceBuilder]{Kind: "pipeline: service"}

// RegisterService registers the builder for a top-level section: "model"
// fills Services.Model, "embedder" fills Services.Embedder. The llm and embed
// packages call it from init.
func RegisterService(section string, b ServiceBuilder) {
	if section != "model" && section != "embedder" {
		panic("pipeline: unknown service section " + section)
	}
	services.Add(section, b)
}

func lookupService(section string) (ServiceBuilder, bool) { return services.Get(section) }
