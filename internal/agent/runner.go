package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/store"
)

// EpisodeBucket is the store bucket holding finished episodes.
const EpisodeBucket = "intercode.episode"

// loopVersion names the episode loop in cache keys; bump it when the loop
// changes what a stored episode would hold.
const loopVersion = "intercode-agent/2"

// Runner runs an Agent over many tasks.
type Runner struct {
	Agent *Agent
	// Ex is the sandbox the environments run on; owned by the caller.
	Ex executors.Executor
	// EnvOptions configure every environment opened.
	EnvOptions env.Options
	// Cache holds finished episodes (nil: none), so a killed run resumes
	// without repeating them.
	Cache store.Cache
	// Concurrency bounds episodes in flight (default 2), one environment each.
	Concurrency int
	// LogDir, when set, receives one InterCode trajectory file per finished
	// task (LogName), written as the task finishes.
	LogDir string
	// Progress is called after each task (from the workers, serialised).
	Progress func(Progress)
}

// Progress is the state of a run after a task finished.
type Progress struct {
	Done, Total, Successes, Cached, Errors int
	Elapsed                                time.Duration
}

// ETA estimates the time left from the fresh (not cached) episodes' pace.
func (p Progress) ETA() time.Duration {
	fresh := p.Done - p.Cached
	if fresh <= 0 || p.Done >= p.Total {
		return 0
	}
	return time.Duration(float64(p.Elapsed) / float64(fresh) * float64(p.Total-p.Done))
}

// Key is the store key of t's finished episode under this agent.
func (a *Agent) Key(t env.Task, envOpts env.Options) string {
	o := a.opts
	return store.Key(loopVersion, t, o.Strategy, o.Turns, o.Model, o.Seed, o.MaxTokens, o.MaxObservation,
		a.PromptVersion(), envOpts.Limits, envOpts.Params)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// LogName is the file name of task i's trajectory log: position, then the
// task id made safe for a file name.
func LogName(i int, t env.Task) string {
	return fmt.Sprintf("%04d_%s.json", i, unsafeName.ReplaceAllString(t.ID, "_"))
}

// Run plays every task and returns the episodes in task order. Episodes in
// the store are returned as they are (Cached); the others run, at most
// Concurrency at a time, each worker on its own environment. An
// environment failure or a cancelled ctx stops the run with an error; the
// episodes finished so far are stored and logged.
func (r *Runner) Run(ctx context.Context, tasks []env.Task) ([]Episode, error) {
	n := max(r.Concurrency, 1)
	if r.Concurrency <= 0 {
		n = 2
	}
	if r.LogDir != "" {
		if err := os.MkdirAll(r.LogDir, 0o755); err != nil {
			return nil, fmt.Errorf("agent: log dir: %w", err)
		}
	}
	out := make([]Episode, len(tasks))
	var (
		mu   sync.Mutex
		prog = Progress{Total: len(tasks)}
		t0   = time.Now()
	)
	report := func(ep Episode) {
		mu.Lock()
		defer mu.Unlock()
		prog.Done++
		if ep.Success {
			prog.Successes++
		}
		if ep.Cached {
			prog.Cached++
		}
		if ep.Error != "" {
			prog.Errors++
		}
		prog.Elapsed = time.Since(t0)
		if r.Progress != nil {
			r.Progress(prog)
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	jobs := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs := map[string]env.Env{} // one per environment kind, reused across tasks
			defer func() {
				for _, e := range envs {
					e.Close()
				}
			}()
			for i := range jobs {
				ep, err := r.one(ctx, envs, i, tasks[i])
				if err != nil {
					cancel(err)
					continue
				}
				out[i] = ep
				report(ep)
			}
		}()
	}
feed:
	for i := range tasks {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return out, nil
}

// one returns task i's episode from the store or plays it.
func (r *Runner) one(ctx context.Context, envs map[string]env.Env, i int, t env.Task) (Episode, error) {
	keep := func(ep Episode) bool { return ep.Error == "" } // a failed episode is played again
	ep, hit, err := store.Memo(ctx, r.Cache, EpisodeBucket, r.Agent.Key(t, r.EnvOptions), keep, func() (Episode, error) {
		e, ok := envs[t.Env]
		if !ok {
			var err error
			if e, err = env.Open(ctx, t.Env, r.Ex, r.EnvOptions); err != nil {
				return Episode{}, err
			}
			envs[t.Env] = e
		}
		return r.Agent.Run(ctx, e, t)
	})
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("agent: task %s: %w", t.ID, err)
		}
		return Episode{}, err
	}
	ep.Cached = hit
	return ep, r.log(i, ep)
}

// log writes task i's trajectory file (a rename makes it appear whole).
func (r *Runner) log(i int, ep Episode) error {
	if r.LogDir == "" {
		return nil
	}
	if err := env.WriteTrajectories(filepath.Join(r.LogDir, LogName(i, ep.Task)), []env.Trajectory{ep.Trajectory()}); err != nil {
		return fmt.Errorf("agent: log: %w", err)
	}
	return nil
}
