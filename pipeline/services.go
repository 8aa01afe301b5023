package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/codefeedback/codefeedback/executors"
	"gopkg.in/yaml.v3"
)

// buildServices builds the shared model and embedder services from their
// sections of the pipeline file.
func (r *runner) buildServices() (err error) {
	if r.model, err = buildAs[ModelService](r, "model", r.cfg.model); err != nil {
		return err
	}
	r.embed, err = buildAs[EmbedService](r, "embedder", r.cfg.embedder)
	return err
}

// buildAs builds the service of a section the file has (n) and checks that
// it is a T; without the section, or when it builds none, it is T's zero.
func buildAs[T any](r *runner, section string, n *yaml.Node) (T, error) {
	var zero T
	if n == nil {
		return zero, nil
	}
	v, err := r.buildService(section, n)
	if err != nil || v == nil {
		return zero, err
	}
	s, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("%s: the service is a %T, which does not implement %v", section, v, reflect.TypeFor[T]())
	}
	return s, nil
}

// EmbedService is the run's shared embedding service (embed.Service), built
// from the pipeline file's `embedder:` section. The engine needs only its
// name; stages get their embedder from it with embed.ForStage.
type EmbedService interface {
	// Identity names the embedder (kind and dimension or model), for the
	// Version of the stages that use it.
	Identity() string
}

func (r *runner) buildService(section string, n *yaml.Node) (any, error) {
	b, ok := lookupService(section)
	if !ok {
		return nil, fmt.Errorf("no service registered for `%s:`", section)
	}
	l := &errList{file: r.cfg.File}
	v, err := b(ServiceEnv{Decode: strictDecoder(n, l), Cache: r.db, Logger: r.log, MaxCost: r.o.MaxCost, EngineRetries: true})
	if len(l.errs) > 0 {
		return nil, l.errs
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", section, err)
	}
	return v, nil
}

func (r *runner) services(s *StageSpec) *Services {
	stats := NewStats()
	stats.budget = r.budget
	svc := &Services{
		Logger:   r.log.With("stage", s.Name),
		Cache:    r.db,
		Model:    r.model,
		Embedder: r.embed,
		Stats:    stats,
		RunDir:   r.dir,
		Name:     s.Name,
	}
	if r.cfg.Executor != "" {
		svc.Executor, svc.ExecutorURL = r.executor, r.cfg.Executor
	}
	r.bindUnits(svc, s) // Retry and Failures (call.go) for whole-set stages' model calls
	return svc
}

// executor opens the pipeline's executor once, on first use. Its one-shot
// runs are cached in the run's store (bucket "exec", see
// executors.WithCache), so a forced or resumed stage does not re-run
// identical programs; sessions are not cached.
func (r *runner) executor(ctx context.Context) (executors.Executor, error) {
	r.execMu.Lock()
	defer r.execMu.Unlock()
	if r.exec == nil && r.execErr == nil {
		var ex executors.Executor
		ex, r.execErr = executors.Open(ctx, r.cfg.Executor)
		if r.execErr == nil {
			r.exec = executors.WithCache(ex, r.db)
		}
	}
	return r.exec, r.execErr
}

// serviceReport collects what the shared services report about themselves
// (the model service's per-stage usage and cost) for the manifest.
func (r *runner) serviceReport() json.RawMessage {
	rep := map[string]any{}
	for name, v := range map[string]any{"model": r.model, "embedder": r.embed} {
		if s, ok := v.(interface{ ServiceReport() any }); ok {
			rep[name] = s.ServiceReport()
		}
	}
	if len(rep) == 0 {
		return nil
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return nil // a report that cannot be encoded is left out, not fatal
	}
	return b
}
