package leetcode

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"log/slog"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/embed"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

func init() { pipeline.Register("leetcode", DefaultOptions, newStage) }

// newStage builds the "leetcode" stage. It reads the whole input (chains
// need every problem), passes non-problem items through, and emits the
// chain dialogues, then the alternatives dialogues, in a deterministic order.
func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	pv, err := prompts.Versions(PromptNames...)
	if err != nil {
		return nil, err
	}
	chat, model, err := llm.StageChat(svc, o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("leetcode: %w", err)
	}
	version := map[string]any{"leetcode": "v1", "prompts": pv, "embedder": embed.Identity(svc.Embedder), "model": model, "judge": harness.Version()}
	return &stage{o: o, svc: svc, chat: chat, version: version}, nil
}

// stage is the "leetcode" stage.
type stage struct {
	o       Options
	svc     *pipeline.Services
	chat    llm.Chatter
	version map[string]any
}

// AltGate is the alternatives gate's name in the statistics and the report.
const AltGate = "alternatives"

// Gates implements pipeline.Gated: the alternatives gate rejecting more
// than max_rejected of the dialogues the model finished trips the stage
// loudly (the engine names the setting and quarantines the rejects),
// instead of a run that quietly keeps none.
func (st *stage) Gates() []pipeline.GateRule {
	return []pipeline.GateRule{{Gate: AltGate, MaxShare: st.o.MaxRejected, Setting: "max_rejected"}}
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// UsesExecutor implements pipeline.ExecutorUser: every solution runs.
func (st *stage) UsesExecutor() bool { return true }

// UsesModel implements pipeline.ModelUser.
func (st *stage) UsesModel() bool { return st.chat != nil }

// All implements pipeline.AllStage.
func (st *stage) All(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	return run(ctx, st.o, st.svc, st.chat, in, emit)
}

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	svc := st.svc
	d, ok := pipeline.OwnDialogue(out, "leetcode")
	if !ok || svc.Stats == nil {
		return
	}
	ObserveDialogue(svc.Stats, d)
}

// ObserveDialogue adds one output dialogue to the stats: chains by length
// and method, answers judged and passed.
func ObserveDialogue(s *pipeline.Stats, d schema.Dialogue) {
	s.Add("dialogues/"+d.Method, 1)
	if d.Labels["mode"] == ModeChains {
		s.Add("chains/length/"+d.Labels["chain_length"], 1)
	}
	for _, m := range d.Messages {
		if m.Role == schema.RoleExecution && m.Exec != nil && m.Exec.Passed != nil {
			s.Add("runs/judged", 1)
			if *m.Exec.Passed {
				s.Add("runs/passed", 1)
			}
		}
	}
	if u := d.Labels["unchecked_languages"]; u != "" {
		s.Add("alternatives/unchecked_dialogues", 1)
	}
}

// Summary is what one run of the stage did, for logs and tests.
type Summary struct {
	Problems, Eligible, ReferenceFailed int
	Chains, ChainsFailed                int
	Alternatives, AlternativesFailed    int
	AlternativesSkipped                 bool
}

func run(ctx context.Context, o Options, svc *pipeline.Services, chat llm.Chatter,
	in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	log := svc.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var ps []schema.Problem
	var sum Summary
	for it, err := range in {
		if err != nil {
			return err
		}
		if it.Kind != pipeline.KindProblem {
			if err := emit(it); err != nil {
				return err
			}
			continue
		}
		p, err := pipeline.As[schema.Problem](it, pipeline.KindProblem)
		if err != nil {
			return fmt.Errorf("leetcode: %w", err)
		}
		sum.Problems++
		if o.KeepProblems {
			if err := emit(it); err != nil {
				return err
			}
		}
		if Eligible(p) {
			ps = append(ps, p)
		}
	}
	sum.Eligible = len(ps)
	stats := svc.Stats
	if stats == nil {
		stats = pipeline.NewStats()
	}
	if len(ps) == 0 {
		log.Info("leetcode: no judgeable problems in the input (need a solution, tests and an entry point)", "problems", sum.Problems)
		return nil
	}
	if svc.Executor == nil {
		return errors.New("leetcode: needs a sandbox; add a top-level `executor:` (e.g. bwrap://) to the pipeline file")
	}
	ex, err := svc.Executor(ctx)
	if err != nil {
		return fmt.Errorf("leetcode: open sandbox: %w", err)
	}
	g := &Generator{Opts: o, Exec: ex, Embedder: nil, Chat: chat, Svc: svc}
	if g.Embedder, err = embed.ForStage(svc); err != nil {
		return fmt.Errorf("leetcode: %w", err)
	}
	out, err := g.Generate(ctx, ps)
	if err != nil {
		return err
	}
	for _, v := range out.AltVerdicts {
		gates.Record(pipeline.ItemStats(ctx, stats), AltGate, v.Verdict)
	}
	sum = out.Summary(sum)
	stats.Set("problems/input", float64(sum.Problems))
	stats.Set("problems/eligible", float64(sum.Eligible))
	stats.Set("problems/reference_failed", float64(sum.ReferenceFailed))
	stats.Set("chains/failed", float64(sum.ChainsFailed))
	stats.Set("alternatives/failed", float64(sum.AlternativesFailed))
	for reason, n := range out.AltRejected {
		stats.Set("alternatives/rejected/"+reason, float64(n))
	}
	if sum.AlternativesSkipped {
		stats.Set("alternatives/skipped_no_model", 1)
		log.Warn("leetcode: alternatives skipped, no model configured; chains use the reference solutions", "enable", llm.NoModelHint)
	}
	log.Info("leetcode: done", "problems", sum.Problems, "eligible", sum.Eligible, "reference_failed", sum.ReferenceFailed,
		"chains", sum.Chains, "chains_failed", sum.ChainsFailed, "alternatives", sum.Alternatives, "alternatives_failed", sum.AlternativesFailed)
	for _, d := range out.Dialogues {
		it, err := pipeline.DialogueItem(d)
		if err != nil {
			return err
		}
		if err := emit(it); err != nil {
			return err
		}
	}
	return nil
}

// Generator builds the stage's dialogues from a set of problems.
type Generator struct {
	Opts     Options
	Exec     executors.Executor
	Embedder embed.Embedder
	// Chat is the model, nil for the model-free path.
	Chat llm.Chatter
	// Svc, when set, gives each model dialogue the engine's retry rules for
	// the stage (pipeline.Retry); nil: the defaults of a stage.
	Svc *pipeline.Services
}

// Output is what Generate made.
type Output struct {
	Dialogues []schema.Dialogue
	// Failed reference ids (their solution fails their own tests).
	ReferenceFailed []string
	Chains          int
	ChainsFailed    int // model path: a turn still failed after the loop
	Alternatives    int
	AltFailed       int
	AltRejected     map[string]int // failed alternatives by the gate's reason (alternatives.go)
	AltSkipped      bool
	Eligible        int
	// AltVerdicts are the alternatives gate's verdicts, in job order: one
	// per alternatives dialogue the model finished.
	AltVerdicts []AltVerdict
}

// AltVerdict is the alternatives gate's verdict on one dialogue.
type AltVerdict struct {
	ID, Kind string // the dialogue and its alternative kind
	gates.Verdict
}

// Summary folds the output into s.
func (out Output) Summary(s Summary) Summary {
	s.ReferenceFailed = len(out.ReferenceFailed)
	s.Chains, s.ChainsFailed = out.Chains, out.ChainsFailed
	s.Alternatives, s.AlternativesFailed, s.AlternativesSkipped = out.Alternatives, out.AltFailed, out.AltSkipped
	return s
}

// Generate judges every problem's reference solution, groups the passing
// problems into chains and builds the dialogues: reference chains without a
// model; with one, model-answered chains and alternatives. ps must be
// eligible (see Eligible). Errors are sandbox failures, a spent budget or
// cancellation; a dialogue that fails is counted, not an error.
func (g *Generator) Generate(ctx context.Context, ps []schema.Problem) (Output, error) {
	o := g.Opts
	out := Output{Eligible: len(ps)}
	jobs := make([]harness.Job, len(ps))
	for i, p := range ps {
		jobs[i] = harness.Job{Problem: p, Code: ShownCode(p)}
	}
	vs, err := harness.JudgeMany(ctx, g.Exec, jobs, o.hopts(), o.Parallel)
	if err != nil {
		return out, fmt.Errorf("leetcode: judge reference solutions: %w", err)
	}
	var good []schema.Problem
	var goodV []harness.Verdict
	for i, v := range vs {
		if !v.Passed {
			out.ReferenceFailed = append(out.ReferenceFailed, ps[i].ID)
			continue
		}
		good = append(good, ps[i])
		goodV = append(goodV, v)
	}
	var groups [][]int
	if o.has(ModeChains) {
		if groups, err = Chains(ctx, g.Embedder, good, o); err != nil {
			return out, err
		}
	}
	if g.Chat == nil {
		for _, grp := range groups {
			chain := make([]schema.Problem, len(grp))
			cv := make([]harness.Verdict, len(grp))
			for k, x := range grp {
				chain[k], cv[k] = good[x], goodV[x]
			}
			out.Dialogues = append(out.Dialogues, ReferenceChain(chain, cv))
			out.Chains++
		}
		out.AltSkipped = o.has(ModeAlternatives)
		return out, nil
	}
	mg, err := NewModelGen(g.Chat, g.Exec, o)
	if err != nil {
		return out, err
	}
	var mj []modelJob
	for _, grp := range groups {
		mj = append(mj, modelJob{chain: grp})
	}
	if o.has(ModeAlternatives) {
		for i, p := range good {
			if o.MaxAlternatives > 0 && i >= o.MaxAlternatives {
				break
			}
			mj = append(mj, modelJob{alt: i, kind: drawKind(o.Seed, p.ID, o.Alternatives)})
		}
	}
	return out, g.runModel(ctx, mg, good, mj, &out)
}

// drawKind picks the alternative kind of a problem by seed.
func drawKind(seed int64, id string, kinds []string) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d\x00%s", seed, id)
	return kinds[h.Sum64()%uint64(len(kinds))]
}

// hopts are the harness limits for one judged run.
func (o Options) hopts() harness.Options {
	return harness.Options{Timeout: o.Timeout, CaseTimeout: min(5*time.Second, o.Timeout)}
}

// modelJob is one model-path dialogue to build.
type modelJob struct {
	chain []int  // problem indexes of a chain, or
	alt   int    // the problem of an alternatives dialogue
	kind  string // alternative kind
}

// runModel builds the model-path dialogues with at most Parallel in flight,
// returned in job order; dialogues whose code still fails, or that the
// alternatives gate rejects, are left out and counted. Each dialogue is a
// unit under the engine's retry rules (pipeline.Retry): a transient model
// or sandbox error is retried up to the stage's `retries`, and a dialogue
// that still fails is a failed unit (an error wrapping
// pipeline.ErrUnitsFailed, after the others are built), never a silently
// missing dialogue. It stops at once on a budget or cancellation error.
func (g *Generator) runModel(ctx context.Context, mg *ModelGen, ps []schema.Problem, jobs []modelJob, out *Output) error {
	res := make([]*schema.Dialogue, len(jobs))
	failed := make([]bool, len(jobs))
	rejected := make([]*schema.Dialogue, len(jobs))
	errs := make([]error, len(jobs))
	var units pipeline.Failures
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(g.Opts.Parallel)
	for i, j := range jobs {
		eg.Go(func() error {
			var (
				d      schema.Dialogue
				passed bool
			)
			unit := "alternatives of " + ps[j.alt].ID
			if j.chain != nil {
				unit = "chain of " + ps[j.chain[0]].ID
			}
			attempts, err := pipeline.Retry(gctx, g.Svc, unit, func(ctx context.Context) (err error) {
				if j.chain != nil {
					chain := make([]schema.Problem, len(j.chain))
					for k, x := range j.chain {
						chain[k] = ps[x]
					}
					d, passed, err = mg.Chain(ctx, chain)
				} else {
					d, passed, err = mg.Alternative(ctx, ps[j.alt], j.kind)
				}
				return err
			})
			switch {
			case err != nil && fatal(gctx, err):
				return err
			case err != nil && pipeline.IsTransient(err):
				units.Add(unit, attempts, err) // the model or sandbox kept failing
				return nil
			case err != nil:
				failed[i], errs[i] = true, err // unreadable answers: drop this one
				return nil
			case !passed:
				failed[i], rejected[i] = true, &d
				return nil
			}
			res[i] = &d
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	for i, j := range jobs {
		switch {
		case res[i] != nil && j.chain != nil:
			out.Chains++
			out.Dialogues = append(out.Dialogues, *res[i])
		case res[i] != nil:
			out.Alternatives++
			out.Dialogues = append(out.Dialogues, *res[i])
			out.AltVerdicts = append(out.AltVerdicts, AltVerdict{ID: res[i].ID, Kind: j.kind})
		case failed[i] && j.chain != nil:
			out.ChainsFailed++
		case failed[i]:
			out.AltFailed++
			v := altVerdict(rejected[i], errs[i])
			v.Kind = j.kind
			if out.AltRejected == nil {
				out.AltRejected = map[string]int{}
			}
			out.AltRejected[v.Reason]++
			out.AltVerdicts = append(out.AltVerdicts, v)
		}
	}
	return units.Err(g.Svc)
}

// Reasons of the alternatives gate besides the checks of alternatives.go.
const (
	RejectTestsFailed = "tests_failed" // the Python solution still failed its tests after the loop
	RejectUnreadable  = "unreadable"   // the model's answers could not be used (after repairs)
)

// altVerdict is the alternatives gate's verdict on a dialogue that was not
// kept (d nil when err says why): its reason and, as detail, the answer
// the gate judged (the last assistant turn with code).
func altVerdict(d *schema.Dialogue, err error) AltVerdict {
	if d == nil {
		return AltVerdict{Verdict: gates.Verdict{Reason: RejectUnreadable, Detail: fmt.Sprint(err)}}
	}
	v := AltVerdict{ID: d.ID, Verdict: gates.Verdict{Reason: d.Labels["rejected"]}}
	switch v.Reason {
	case RejectSame, RejectNoComplexity, RejectUnjudged, RejectLangFailed:
	default:
		// The write-run-fix loop's label is a sentence, not a reason: the
		// Python solution still failed its tests.
		v.Reason = RejectTestsFailed
		v.Detail = d.Labels["rejected"] + "\n"
	}
	if ans := turnAnswers(d.Messages); len(ans) > 0 {
		v.Detail += ans[len(ans)-1].Content
	}
	if strings.TrimSpace(v.Detail) == "" {
		v.Detail = d.ID
	}
	return v
}
