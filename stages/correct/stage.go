// Package correct is the "correct" stage: "learning from deliberate
// mistakes" dialogues, code with a planted bug, the real error it raises in
// the sandbox, a brief analysis, and the fixed code with its passing run.
//
// Two paths make the buggy code. The mutation path (no model) plants bugs
// into known-good solutions with internal/mutate; the model path asks a
// model for code that hides an error of a chosen kind. On both, a planted
// bug is kept only when its real failure in the sandbox matches the
// intended kind. The package exports its settings only: the engine finds
// the stage by its registered name.
package correct

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Options are the pipeline-file settings of the "correct" stage.
type Options struct {
	// Method is "mutation" (no model; plants bugs into reference solutions)
	// or "model" (asks the pipeline's model for code with a hidden error).
	Method string `yaml:"method" json:"method"`
	// Kinds of bugs to plant (default all five).
	Kinds []string `yaml:"kinds" json:"kinds"`
	// Seed picks mutation sites.
	Seed int64 `yaml:"seed" json:"seed"`
	// PerOperator caps the mutants tried per operator and problem.
	PerOperator int `yaml:"per_operator" json:"per_operator"`
	// PerKind is the number of dialogues kept per kind and problem (mutation).
	PerKind int `yaml:"per_kind" json:"per_kind"`
	// Timeout bounds an ordinary test run, LoopTimeout a run expected to hang.
	Timeout     time.Duration `yaml:"timeout" json:"timeout"`
	LoopTimeout time.Duration `yaml:"loop_timeout" json:"loop_timeout"`
	// LoopFactor bounds a mutant run expected to hang by this many times the
	// reference solution's run time (at least 0.5 s, at most loop_timeout);
	// 0 = loop_timeout always.
	LoopFactor float64 `yaml:"loop_factor" json:"loop_factor"`
	// Endpoint names the model endpoint of the `model:` section (method
	// model; "" = the default).
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// KeepProblems also passes problem items on (they are consumed
	// otherwise); items of other kinds always pass through unchanged.
	KeepProblems bool `yaml:"keep_problems" json:"keep_problems"`
}

// DefaultOptions are the stage's defaults.
var DefaultOptions = Options{Method: "mutation", Seed: 1, PerOperator: 2, PerKind: 1,
	Timeout: 10 * time.Second, LoopTimeout: time.Second, LoopFactor: defaultLoopFactor}

// defaultLoopFactor is the default loop_factor: 0, a fixed limit. A limit
// scaled by the reference's measured time follows the machine's load, and
// the limit is quoted in the dialogue ("timed out after 1.25s"), so the
// same input would give different dialogues (and cache entries) from run
// to run.
const defaultLoopFactor = 0

// Validate checks the settings.
func (o Options) Validate() error {
	if o.Method != "mutation" && o.Method != "model" {
		return fmt.Errorf("correct: method %q: want mutation or model", o.Method)
	}
	ks, err := o.kinds()
	if err != nil {
		return err
	}
	if o.Method == "mutation" && slices.Contains(ks, mutate.Runtime) {
		return errors.New("correct: the runtime kind is planted by method model only (no mutation operator plants it)")
	}
	if o.PerOperator < 0 || o.PerKind < 0 || o.Timeout < 0 || o.LoopTimeout < 0 || o.LoopFactor < 0 {
		return errors.New("correct: per_operator, per_kind, timeouts and loop_factor must not be negative")
	}
	return nil
}

func (o Options) kinds() ([]mutate.Kind, error) {
	if len(o.Kinds) == 0 {
		return mutate.Kinds(), nil
	}
	var ks []mutate.Kind
	for _, s := range o.Kinds {
		k, err := mutate.ParseKind(s)
		if err != nil {
			return nil, err
		}
		ks = append(ks, k)
	}
	return ks, nil
}

func shortHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:12]
}

func init() {
	pipeline.Register("correct", DefaultOptions, newStage)
}

func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	kinds, _ := o.kinds()
	version := map[string]any{"mutate": shortHash(mutate.Script()), "judge": harness.Version(), "dialogue": "v6"}
	if o.Method == "model" {
		// Every language's prompts: a problem in another language renders
		// the _lang ones, and an edit to them must recompute its items.
		pv, err := promptVersion(executors.Python)
		if err != nil {
			return nil, err
		}
		lv, err := promptVersion(executors.JavaScript)
		if err != nil {
			return nil, err
		}
		version["prompts"] = pv + "," + lv
		// The model's settings decide the answers: a new model recomputes.
		if svc.Model != nil {
			if version["model"], err = svc.ModelKey(o.Endpoint); err != nil {
				return nil, fmt.Errorf("correct: %w", err)
			}
		}
	}
	return &stage{o: o, svc: svc, kinds: kinds, version: version}, nil
}

// stage is the "correct" stage.
type stage struct {
	o       Options
	svc     *pipeline.Services
	kinds   []mutate.Kind
	version map[string]any
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// UsesExecutor implements pipeline.ExecutorUser: every mutant runs.
func (st *stage) UsesExecutor() bool { return true }

// UsesModel implements pipeline.ModelUser: the model method asks one.
func (st *stage) UsesModel() bool { return st.o.Method == "model" }

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	svc := st.svc
	d, ok := pipeline.OwnDialogue(out, "correct")
	if !ok || svc.Stats == nil {
		return
	}
	svc.Stats.Add("dialogues", 1)
	svc.Stats.Add("dialogues."+d.Labels["bug_kind"], 1)
}

// Each implements pipeline.EachStage.
func (st *stage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	o, svc, kinds := st.o, st.svc, st.kinds
	if in.Kind != pipeline.KindProblem {
		return []pipeline.Item{in}, nil
	}
	p, err := pipeline.As[schema.Problem](in, pipeline.KindProblem)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	if svc.Executor == nil {
		return nil, pipeline.Permanent(errors.New("correct: needs a sandbox; add a top-level `executor:` (e.g. bwrap://) to the pipeline file"))
	}
	ex, err := svc.Executor(ctx)
	if err != nil {
		return nil, fmt.Errorf("correct: open sandbox: %w", err)
	}
	chk := &checker{Exec: ex, Timeout: o.Timeout, LoopTimeout: o.LoopTimeout, LoopFactor: o.LoopFactor}
	var dialogues []schema.Dialogue
	if o.Method == "mutation" {
		g := &mutationGenerator{Exec: ex, Checker: chk, Opts: mutationOptions{Seed: o.Seed, Kinds: kinds, PerOperator: o.PerOperator, PerKind: o.PerKind}}
		out, err := g.Generate(ctx, &p)
		if errors.Is(err, errReferenceTimeout) {
			return nil, pipeline.Transient(err)
		}
		if err != nil {
			return nil, err
		}
		dialogues = out.Dialogues
		// Per-item stats: the attempts are not in the outputs, and a
		// cached re-run must report the same yield.
		stats := pipeline.ItemStats(ctx, svc.Stats)
		for _, a := range out.Attempts {
			stats.Add("mutants/tried/"+a.Operator, 1)
			if a.Kept {
				stats.Add("mutants/kept/"+a.Operator, 1)
			} else if svc.Logger != nil {
				svc.Logger.Debug("correct: mutant not kept", "problem", p.ID, "operator", a.Operator, "observed", a.Observed)
			}
		}
		if out.Skipped != "" && svc.Logger != nil {
			svc.Logger.Info("correct: problem skipped", "problem", p.ID, "reason", out.Skipped)
		}
	} else {
		chat, err := llm.ForStage(svc, o.Endpoint)
		if err != nil {
			return nil, pipeline.Permanent(err)
		}
		lang, err := languageOf(&p)
		if err != nil {
			return nil, pipeline.Permanent(err)
		}
		g := &modelGenerator{Chat: chat, Exec: ex, Checker: chk}
		for _, k := range kinds {
			if !plantable(lang, k) {
				// A name or type slip in a compiled language fails to
				// compile: it would show as the syntax kind, not as k.
				pipeline.ItemStats(ctx, svc.Stats).Add("unplantable."+string(k), 1)
				continue
			}
			d, err := g.Generate(ctx, &p, k)
			if isDiscarded(err) {
				pipeline.ItemStats(ctx, svc.Stats).Add("discarded."+string(k), 1)
				if svc.Logger != nil {
					svc.Logger.Warn("correct: injection discarded", "problem", p.ID, "kind", k, "reason", err.Error())
				}
				continue
			}
			if err != nil {
				return nil, err
			}
			dialogues = append(dialogues, d)
		}
	}
	var items []pipeline.Item
	if o.KeepProblems {
		items = append(items, in)
	}
	for _, d := range dialogues {
		it, err := pipeline.DialogueItem(d)
		if err != nil {
			return nil, err
		}
		items = append(items, it)
	}
	return items, nil
}

// keptShare is the share of planted bugs whose real failure matches their
// kind, for estimates (about 4 in 5 on the sample problems and MBPP).
const keptShare = 0.8

// Estimate implements pipeline.Estimator: each problem gives about
// keptShare of PerKind dialogues per kind, each a request, the buggy code,
// its real error and the fix (two code turns); the model method asks one
// call per kind and problem.
func (st *stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	var u pipeline.Usage
	var out []pipeline.Shape
	perKind := max(st.o.PerKind, 1)
	kept := 0.0
	inject := pipeline.TemplateBytes(promptText, "correct_inject")
	for _, sh := range in {
		if sh.Kind != pipeline.KindProblem {
			out = append(out, sh)
			continue
		}
		if st.o.KeepProblems {
			out = append(out, sh)
		}
		if st.o.Method == "model" {
			u = u.Add(pipeline.Calls(len(st.kinds), inject+sh.Bytes, 200))
		}
		for range len(st.kinds) * perKind {
			kept += keptShare
			for ; kept >= 1; kept-- {
				// The fix turn opens with the analysis of the failure: its own explanation.
				out = append(out, pipeline.Shape{Kind: pipeline.KindDialogue, UserTurns: 1, CodeTurns: 2, ExplainedTurns: 1, Bytes: sh.Bytes + 1200})
			}
		}
	}
	return u, out
}

func promptText(name string) (string, error) {
	t, err := prompts.Get(name)
	return t.Text, err
}
