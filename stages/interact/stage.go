// Package interact is the "interact" pipeline stage: InterCode-style tasks
// (Bash on a prepared file system, SQL on a real database, Python, CTF)
// become multi-turn feedback dialogues. The model acts in the task's
// environment with an InterCode prompting strategy, each real observation
// becomes the next turn, and the episode's reward decides whether the
// dialogue is kept. Dialogues carry the environment, the task and the
// rewards in their labels, so `codefeedback verify` replays them.
//
// Tasks enter a pipeline through the "intercode" input format (JSON Lines
// of tasks, or InterCode's own data files), as items of kind KindTask;
// other items pass through.
package interact

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	_ "github.com/codefeedback/codefeedback/executors/env/all"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// KindTask is the item kind of an InterCode task (an env.Task).
const KindTask = "intercode_task"

// Options are the pipeline-file settings of the "interact" stage.
type Options struct {
	// Strategy is the prompting strategy (single, tryagain, react,
	// plan-solve) and Turns its action limit.
	Strategy string `yaml:"strategy" json:"strategy"`
	Turns    int    `yaml:"turns" json:"turns"`
	// MinReward keeps dialogues whose episode reached it (1: solved only;
	// 0: every episode, labelled pass or fail).
	MinReward float64 `yaml:"min_reward" json:"min_reward"`
	// Endpoint names the model endpoint ("" = the stage's default).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// MaxObservation caps the characters of an observation shown to the model.
	MaxObservation int `yaml:"max_observation" json:"max_observation"`
	// Params are environment settings (e.g. sql's backend).
	Params map[string]string `yaml:"params" json:"params,omitempty"`
	// MaxNoAction is the share (0..1) of the model's answers that may hold
	// no action (prose where a command was asked, an empty or garbled
	// answer) before the stage fails: a model that cannot play the
	// environment must stop the run, not thin its yield in silence.
	MaxNoAction float64 `yaml:"max_no_action" json:"max_no_action"`
}

// DefaultOptions are the stage's defaults.
var DefaultOptions = Options{Strategy: agent.TryAgain, Turns: 3, MinReward: 1, MaxObservation: 2000, MaxNoAction: 0.2}

// Gate is the name of the action gate in the stage's statistics.
const Gate = "action"

// Validate checks the settings.
func (o Options) Validate() error {
	if err := (agent.Options{Strategy: o.Strategy, Turns: o.Turns}).Validate(); err != nil {
		return fmt.Errorf("interact: %w", err)
	}
	if o.MinReward < 0 || o.MinReward > 1 {
		return fmt.Errorf("interact: min_reward %v outside [0, 1]", o.MinReward)
	}
	if o.MaxNoAction < 0 || o.MaxNoAction > 1 {
		return fmt.Errorf("interact: max_no_action %v: want a share between 0 and 1", o.MaxNoAction)
	}
	return nil
}

func init() {
	pipeline.Register("interact", DefaultOptions, newStage)
	pipeline.RegisterInput("intercode", readTasks)
}

// readTasks is the "intercode" input format.
func readTasks(_ context.Context, path string) iter.Seq2[pipeline.Item, error] {
	return func(yield func(pipeline.Item, error) bool) {
		ts, err := agent.LoadTasks(path, "")
		if err != nil {
			yield(pipeline.Item{}, err)
			return
		}
		for _, t := range ts {
			it, err := pipeline.NewItem(KindTask, t.ID, t)
			if !yield(it, err) || err != nil {
				return
			}
		}
	}
}

// stage is the interact stage.
type stage struct {
	o       Options
	svc     *pipeline.Services
	ag      *agent.Agent // nil without a model
	version map[string]any
	pool    *envPool
	warned  sync.Once
	// goldWarned: the warning that a gold does not run, once per run.
	goldWarned sync.Once
	exMu       sync.Mutex
	own        map[string]executors.Executor // executors opened for an environment's image
}

func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	pv, err := agent.DialoguePromptVersion()
	if err != nil {
		return nil, err
	}
	chat, model, err := llm.StageChat(svc, o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("interact: %w", err)
	}
	version := map[string]any{"dialogue_prompts": pv, "interact": "v1", "model": model}
	var ag *agent.Agent
	if chat != nil {
		if ag, err = agent.New(agent.Options{Strategy: o.Strategy, Turns: o.Turns, MaxObservation: o.MaxObservation}, chat); err != nil {
			return nil, err
		}
		version["agent_prompts"] = ag.PromptVersion()
	}
	return &stage{o: o, svc: svc, ag: ag, version: version, pool: &envPool{free: map[string][]env.Env{}}, own: map[string]executors.Executor{}}, nil
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// UsesExecutor implements pipeline.ExecutorUser: every action runs.
func (st *stage) UsesExecutor() bool { return true }

// UsesModel implements pipeline.ModelUser.
func (st *stage) UsesModel() bool { return st.ag != nil }

// Close implements io.Closer: the idle environments are closed, then the
// executors the stage opened itself.
func (st *stage) Close() error {
	err := st.pool.close()
	st.exMu.Lock()
	defer st.exMu.Unlock()
	for name, ex := range st.own {
		if ex != nil {
			err = errors.Join(err, ex.Close())
		}
		delete(st.own, name)
	}
	return err
}

// executor is the sandbox for envName's tasks: on docker, bash and ctf run
// their own images (env.ExecutorURL), opened once by the stage; everything
// else the pipeline's executor.
func (st *stage) executor(ctx context.Context, envName string) (executors.Executor, error) {
	raw := st.svc.ExecutorURL
	if raw == "" || env.ExecutorURL(envName, raw) == raw {
		return st.svc.Executor(ctx)
	}
	st.exMu.Lock()
	defer st.exMu.Unlock()
	if ex, ok := st.own[envName]; ok {
		return ex, nil
	}
	ex, err := env.OpenExecutor(ctx, envName, raw, func(msg string) {
		if st.svc.Logger != nil {
			st.svc.Logger.Warn("interact: " + msg)
		}
	})
	if err != nil {
		return nil, err
	}
	st.own[envName] = ex
	return ex, nil
}

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	svc := st.svc
	if out.Kind != pipeline.KindDialogue || svc.Stats == nil {
		return
	}
	d, err := pipeline.As[schema.Dialogue](out, pipeline.KindDialogue)
	if err != nil || d.Stage != svc.Name || !agent.IsInteract(&d) {
		return
	}
	observe(svc.Stats, d)
}

// Each implements pipeline.EachStage: a task becomes an episode and, when
// its reward is high enough, a dialogue; other items pass through.
func (st *stage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	svc, o, ag, pool := st.svc, st.o, st.ag, st.pool
	if in.Kind != KindTask {
		return []pipeline.Item{in}, nil
	}
	if ag == nil {
		// Without a model there is no episode: the task is dropped (it
		// is not training data) and the run says so once.
		st.warned.Do(func() {
			if svc.Logger != nil {
				svc.Logger.Warn("interact: skipped, no model configured; to run it " + llm.NoModelHint)
			}
		})
		pipeline.ItemStats(ctx, svc.Stats).Add("skipped/no_model", 1)
		return nil, nil
	}
	t, err := pipeline.As[env.Task](in, KindTask)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	if svc.Executor == nil {
		return nil, pipeline.Permanent(errors.New("interact: needs a sandbox; add a top-level `executor:` (e.g. bwrap://) to the pipeline file"))
	}
	ex, err := st.executor(ctx, t.Env)
	if err != nil {
		return nil, pipeline.Transient(fmt.Errorf("interact: open sandbox: %w", err))
	}
	e, err := pool.get(ctx, t.Env, ex, env.Options{Params: o.Params})
	if err != nil {
		return nil, pipeline.Permanent(fmt.Errorf("interact: task %s: %w", t.ID, err))
	}
	ep, err := ag.Run(ctx, e, t)
	if err != nil {
		e.Close() // its state is unknown after a failure
		return nil, fmt.Errorf("interact: %w", err)
	}
	pool.put(t.Env, e)
	if ep.Error != "" {
		return nil, pipeline.Transient(fmt.Errorf("interact: task %s: %s", t.ID, ep.Error))
	}
	stats := pipeline.ItemStats(ctx, svc.Stats)
	st.gateActions(stats, ep)
	if ep.GoldError != "" {
		// A gold that does not run proves no answer right (WikiSQL's
		// pseudo-SQL): counted, and said once per run.
		stats.Add("gold_error/"+t.Env, 1)
		st.goldWarned.Do(func() {
			if svc.Logger != nil {
				svc.Logger.Warn("interact: a task's gold does not run in its environment; its episodes score 0 "+
					"(`codefeedback intercode check-golds TASKFILE` lists such tasks)", "task", t.ID, "error", ep.GoldError)
			}
		})
	}
	if ep.Reward < o.MinReward || ep.AgentTurns() == 0 {
		// Recorded with the item so a cached re-run counts it too.
		stats.Add("dropped/"+t.Env, 1)
		observeEpisode(stats, ep)
		return nil, nil
	}
	ep.Model = modelName(svc, o.Endpoint)
	d, err := ep.Dialogue(svc.Name)
	if err != nil {
		stats.Add("dropped/"+t.Env, 1)
		return nil, nil
	}
	observeEpisode(stats, ep)
	it, err := pipeline.DialogueItem(d)
	if err != nil {
		return nil, err
	}
	return []pipeline.Item{it}, nil
}

// gateActions records the action gate's verdict on each answer the model
// gave (the loop's own submits aside). Counted with the item, so a cached
// re-run counts the same.
func (st *stage) gateActions(stats gates.Adder, ep agent.Episode) {
	for _, s := range ep.Steps {
		if s.Auto {
			continue
		}
		v := gates.Verdict{}
		if s.Action == "" && !s.Submit {
			v = gates.Verdict{Reason: "no_action", Detail: gates.Cut(strings.TrimSpace(s.Answer), 200)}
			if strings.TrimSpace(s.Answer) == "" {
				v.Reason = "empty"
			}
		}
		gates.Record(stats, Gate, v)
	}
}

// Gates implements pipeline.Gated: the stage trips when more than
// max_no_action of the model's answers held no action.
func (st *stage) Gates() []pipeline.GateRule {
	return []pipeline.GateRule{{Gate: Gate, MaxShare: st.o.MaxNoAction, Setting: "max_no_action"}}
}

func modelName(svc *pipeline.Services, endpoint string) string {
	if k, err := svc.ModelKey(endpoint); err == nil {
		if p, ok := k.(llm.Params); ok {
			return p.Model
		}
	}
	return ""
}

// observeEpisode counts an episode's outcome per environment: episodes,
// successes, reward, actions and failed actions, turns to success.
func observeEpisode(stats *pipeline.Stats, ep agent.Episode) {
	m := agent.Summarize([]agent.Episode{ep})[0]
	e := ep.Task.Env
	stats.Add("episodes/"+e, 1)
	stats.Add("success/"+e, float64(m.Successes))
	stats.Add("reward/"+e, m.MeanReward)
	stats.Add("actions/"+e, float64(m.Actions))
	stats.Add("failed_actions/"+e, float64(m.FailedActions))
	if ep.Success {
		stats.Add(fmt.Sprintf("turns_to_success/%d", ep.TurnsToSuccess), 1)
	}
}

// observe counts kept dialogues per environment.
func observe(stats *pipeline.Stats, d schema.Dialogue) {
	stats.Add("dialogues/"+d.Labels[agent.LabelEnv], 1)
	stats.Add(fmt.Sprintf("turns/%d", len(d.Messages)), 1)
}

// envPool keeps idle environments per kind: one episode per environment at
// a time, reused across items (a reset is far cheaper than an open).
type envPool struct {
	mu   sync.Mutex
	free map[string][]env.Env
}

func (p *envPool) get(ctx context.Context, name string, ex executors.Executor, opts env.Options) (env.Env, error) {
	p.mu.Lock()
	if fs := p.free[name]; len(fs) > 0 {
		e := fs[len(fs)-1]
		p.free[name] = fs[:len(fs)-1]
		p.mu.Unlock()
		return e, nil
	}
	p.mu.Unlock()
	return env.Open(ctx, strings.TrimSpace(name), ex, opts)
}

func (p *envPool) put(name string, e env.Env) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free[name] = append(p.free[name], e)
}

func (p *envPool) close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, fs := range p.free {
		for _, e := range fs {
			errs = append(errs, e.Close())
		}
	}
	p.free = map[string][]env.Env{}
	return errors.Join(errs...)
}

// Estimate implements pipeline.Estimator: a task's episode takes at most
// Turns calls (it ends early once solved; the estimate counts them all),
// each prompt the agent's instructions, the task and the turns so far; half
// the episodes are taken to be solved and kept, with half the turns.
func (st *stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	if st.ag == nil {
		return pipeline.Usage{}, in
	}
	const turnBytes = 400 // an action and its observation
	base := pipeline.TemplateBytes(func(name string) (string, error) {
		t, err := prompts.Get(name)
		return t.Text, err
	}, "agent_system", "agent_"+string(st.o.Strategy))
	var t pipeline.Tally
	var out []pipeline.Shape
	kept, solved := 0, 0.0
	for _, sh := range in {
		if sh.Kind != KindTask {
			out = append(out, sh)
			continue
		}
		// Each turn solves an unsolved episode with probability 1/2 and
		// a solved one asks no more: turn i is asked with 1/2^i.
		open, calls := 1.0, 0.0
		for i := range st.o.Turns {
			t.Add(open, base+sh.Bytes+i*turnBytes, 60)
			calls += open
			open /= 2
		}
		if st.o.MinReward > 0 {
			solved += 1 - open
		} else {
			solved++ // every episode is kept
		}
		if k := int(math.Round(solved)); k > kept {
			kept = k
			n := int(math.Round(calls))
			out = append(out, pipeline.Shape{Kind: pipeline.KindDialogue, UserTurns: 1, CodeTurns: n, Bytes: sh.Bytes + n*turnBytes})
		}
	}
	return t.Usage(), out
}
