package evaluate

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/pipeline/llm"
)

// InterCodePrefix starts the name of an InterCode benchmark
// ("intercode-bash", "intercode-sql", ...): one per environment.
const InterCodePrefix = "intercode-"

// InterCodeName is the benchmark name of an environment's tasks.
func InterCodeName(envName string) string { return InterCodePrefix + envName }

// InterCodeOptions configure the InterCode part of an evaluation.
type InterCodeOptions struct {
	// Strategy is the prompting strategy (default tryagain): with Try
	// Again, refinement round r is turn r+1, so the rows line up with the
	// other benchmarks' rounds.
	Strategy string
	// LogDir receives one trajectory log per task ("" for none).
	LogDir string
}

// RunInterCode plays tasks with an agent of the evaluation's model for
// Rounds+1 turns, resuming finished episodes from the evaluation's store.
// With CanonicalModel the agent answers each task's gold action (a check
// of the environments and their data).
func (e *Evaluator) RunInterCode(ctx context.Context, tasks []env.Task, o InterCodeOptions, progress func(agent.Progress)) ([]agent.Episode, error) {
	if o.Strategy == "" {
		o.Strategy = agent.TryAgain
	}
	var model llm.Chatter = e.model
	if model == nil {
		model = newGoldChatter(tasks)
	}
	a, err := agent.New(agent.Options{Strategy: o.Strategy, Turns: e.opts.Rounds + 1, Model: e.opts.Model,
		Seed: e.opts.Seed, MaxTokens: e.opts.MaxTokens}, model)
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	r := &agent.Runner{Agent: a, Ex: e.ex, Cache: e.cache, Concurrency: e.opts.Concurrency, LogDir: o.LogDir, Progress: progress}
	return r.Run(ctx, tasks)
}

// goldChatter answers an InterCode task with its gold action. The task is
// the episode's own (agent.TaskOf), found by its id: a query can hold
// another task's query (Spider task 780's holds 603's), so searching the
// conversation answered some tasks with another's gold.
type goldChatter struct{ tasks map[string]env.Task }

func newGoldChatter(tasks []env.Task) goldChatter {
	g := goldChatter{tasks: map[string]env.Task{}}
	for _, t := range tasks {
		g.tasks[t.ID] = t
	}
	return g
}

func (g goldChatter) Chat(ctx context.Context, _ llm.Request) (llm.Response, error) {
	cur, ok := agent.TaskOf(ctx)
	if !ok {
		return llm.Response{}, errors.New("evaluate: canonical: the model call carries no task")
	}
	t, ok := g.tasks[cur.ID]
	if !ok {
		return llm.Response{}, fmt.Errorf("evaluate: canonical: task %s is not among the evaluated tasks", cur.ID)
	}
	if t.Env == "ctf" {
		return llm.Response{Text: "submit " + t.Gold}, nil
	}
	return llm.Response{Text: "```" + agent.Lang(t.Env) + "\n" + t.Gold + "\n```"}, nil
}

// AddInterCode adds one benchmark per environment to the report: success
// after round r counts the episodes that reached reward 1 within r+1
// turns; the InterCode metrics (mean reward, error rate, turns) go to
// Report.InterCode.
func (r *Report) AddInterCode(eps []agent.Episode) {
	byEnv := map[string][]agent.Episode{}
	for _, ep := range eps {
		byEnv[ep.Task.Env] = append(byEnv[ep.Task.Env], ep)
	}
	envs := make([]string, 0, len(byEnv))
	for e := range byEnv {
		envs = append(envs, e)
	}
	sort.Strings(envs)
	for _, en := range envs {
		ss := byEnv[en]
		br := BenchmarkReport{Name: InterCodeName(en), Total: len(ss)}
		for rd := 0; rd <= r.Rounds; rd++ {
			sc := RoundScore{Round: rd, Total: len(ss)}
			for _, ep := range ss {
				if ep.Success && ep.TurnsToSuccess <= rd+1 {
					sc.Passed++
				}
			}
			sc.PassAt1 = 100 * float64(sc.Passed) / float64(sc.Total)
			br.Rounds = append(br.Rounds, sc)
		}
		for _, ep := range ss {
			if ep.Success {
				br.BasePassed++
			} else {
				br.Failed = append(br.Failed, ep.Task.ID)
			}
			if ep.Error != "" {
				br.Errors = append(br.Errors, ep.Task.ID)
			}
			if ep.Cached {
				r.CachedSamples++
			}
		}
		r.Samples += len(ss)
		sort.Strings(br.Failed)
		sort.Strings(br.Errors)
		r.Benchmarks = append(r.Benchmarks, br)
	}
	r.InterCode = append(r.InterCode, agent.Summarize(eps)...)
}
