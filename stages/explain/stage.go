package explain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/internal/gates"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// Options are the pipeline-file settings of the "explain" stage.
type Options struct {
	// Repairs bounds the repair requests after a preface that holds a code
	// block; after them the blocks are stripped from the last answer.
	Repairs int `yaml:"repairs" json:"repairs"`
	// Endpoint names the model endpoint ("" = the stage's default).
	Endpoint string `yaml:"endpoint" json:"endpoint,omitempty"`
	// ContextChars caps each earlier turn shown to the model.
	ContextChars int `yaml:"context_chars" json:"context_chars"`
	// Sentences is the preface length asked of the model, in words.
	Sentences string `yaml:"sentences" json:"sentences"`
	// MaxRejected is the share (0..1) of code turns whose prefaces may fail
	// the gate before the stage fails loudly (1 = never fail).
	MaxRejected float64 `yaml:"max_rejected" json:"max_rejected"`
}

// DefaultOptions are the stage's defaults.
var DefaultOptions = Options{Repairs: 2, ContextChars: 3000, Sentences: "two to four", MaxRejected: 0.2}

// Validate checks the settings.
func (o Options) Validate() error {
	if o.Repairs < 0 || o.ContextChars < 0 {
		return errors.New("explain: repairs and context_chars must not be negative")
	}
	if o.MaxRejected < 0 || o.MaxRejected > 1 {
		return fmt.Errorf("explain: max_rejected %v: want a share between 0 and 1", o.MaxRejected)
	}
	return nil
}

func init() { pipeline.Register("explain", DefaultOptions, newStage) }

// newStage builds the "explain" stage: dialogue items get prefaces; other
// kinds pass through. Without a model every item passes through unchanged,
// the stats say "skipped/no_model" and the log says how to enable it.
func newStage(o Options, svc *pipeline.Services) (*stage, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	pv, err := prompts.Versions(PromptNames...)
	if err != nil {
		return nil, err
	}
	version := map[string]any{"prompts": pv, "explain": "v6-prefaces-do-not-present-the-fault-as-the-plan"}
	chat, model, err := llm.StageChat(svc, o.Endpoint)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	version["model"] = model
	noModel := chat == nil
	st := &stage{svc: svc, version: version, noModel: noModel, maxRejected: o.MaxRejected}
	if !noModel {
		if st.ex, err = New(chat, o.Repairs); err != nil {
			return nil, err
		}
		st.ex.ContextChars = o.ContextChars
		if o.Sentences != "" {
			st.ex.Sentences = o.Sentences
		}
	}
	return st, nil
}

// stage is the "explain" stage.
type stage struct {
	svc     *pipeline.Services
	version map[string]any
	noModel bool
	once    sync.Once
	ex      *Explainer
	// maxRejected is the preface gate's limit (Gates).
	maxRejected float64
}

// Version implements pipeline.Versioner.
func (st *stage) Version() any { return st.version }

// UsesModel implements pipeline.ModelUser.
func (st *stage) UsesModel() bool { return !st.noModel }

// Observe implements pipeline.Observer.
func (st *stage) Observe(out pipeline.Item) {
	svc, noModel := st.svc, st.noModel
	if out.Kind != pipeline.KindDialogue || svc.Stats == nil {
		return
	}
	d, err := pipeline.As[schema.Dialogue](out, pipeline.KindDialogue)
	if err != nil {
		return
	}
	var explained, rejected int
	fmt.Sscan(d.Labels[LabelExplained], &explained)
	fmt.Sscan(d.Labels[LabelRejected], &rejected)
	switch {
	case d.Labels[LabelExplained] != "":
		if explained > 0 {
			svc.Stats.Add("dialogues/explained", 1)
		}
		svc.Stats.Add("turns/explained", float64(explained))
		// The gate's figures come from the labels, so a cached re-run
		// counts the same.
		svc.Stats.Add(gates.CheckedKey(Gate), float64(explained+rejected))
		if rejected > 0 {
			svc.Stats.Add("dialogues/with_unexplained_turns", 1)
			svc.Stats.Add(gates.RejectedKey(Gate), float64(rejected))
			for _, r := range strings.Split(d.Labels[LabelReasons], ",") {
				svc.Stats.Add(gates.ReasonKey(Gate, r), 1)
			}
		}
	case noModel:
		svc.Stats.Add("skipped/no_model", 1)
	default:
		svc.Stats.Add("dialogues/no_code", 1)
	}
}

// Gates implements pipeline.Gated: the stage trips when more than
// max_rejected of the code turns were left unexplained by the gate.
func (st *stage) Gates() []pipeline.GateRule {
	return []pipeline.GateRule{{Gate: Gate, MaxShare: st.maxRejected, Setting: "max_rejected"}}
}

// Bypass implements pipeline.Bypasser: once the gate tripped, dialogues go
// on as they came, without prefaces (their code and outputs stand alone).
func (st *stage) Bypass(in pipeline.Item) ([]pipeline.Item, error) {
	return []pipeline.Item{in}, nil
}

// Each implements pipeline.EachStage.
func (st *stage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	svc, noModel, ex := st.svc, st.noModel, st.ex
	if in.Kind != pipeline.KindDialogue {
		return []pipeline.Item{in}, nil
	}
	if noModel {
		st.once.Do(func() {
			if svc.Logger != nil {
				svc.Logger.Warn("explain: skipped, no model configured; dialogues pass through unchanged",
					"enable", llm.NoModelHint)
			}
		})
		return []pipeline.Item{in}, nil
	}
	d, err := pipeline.As[schema.Dialogue](in, pipeline.KindDialogue)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	if d.Labels[LabelExplained] != "" { // explained by an earlier run of this stage
		return []pipeline.Item{in}, nil
	}
	out, rep, err := ex.Explain(ctx, d)
	if err != nil {
		if errors.Is(err, ErrCodeChanged) {
			return nil, pipeline.Permanent(err) // a property of this input
		}
		return nil, err // the engine knows a model error's class
	}
	if svc.Stats != nil && rep.Repairs > 0 {
		svc.Stats.Add("repairs", float64(rep.Repairs))
	}
	// The gate's figures come from the labels (Observe); the rejected
	// prefaces themselves go to the quarantine with the item.
	for _, v := range rep.Rejected {
		pipeline.ItemStats(ctx, nil).Reject(Gate, v.Reason, v.Detail)
	}
	if rep.Turns == 0 && len(rep.Rejected) == 0 && rep.Already == 0 {
		return []pipeline.Item{in}, nil
	}
	it, err := pipeline.DialogueItem(out)
	if err != nil {
		return nil, err
	}
	return []pipeline.Item{it}, nil
}

// Estimate implements pipeline.Estimator: one call per assistant turn with
// code and no explanation of its own (a repair only after a rejected preface, not counted), its prompt
// the templates and the conversation up to that turn, each earlier turn cut
// at ContextChars; the preface runs to about 80 tokens.
func (st *stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	if st.noModel {
		return pipeline.Usage{}, in
	}
	tmpl := pipeline.TemplateBytes(func(name string) (string, error) {
		t, err := prompts.Get(name)
		return t.Text, err
	}, "explain_system", "explain_request")
	var t pipeline.Tally
	for _, sh := range in {
		if sh.Kind != pipeline.KindDialogue || sh.CodeTurns-sh.ExplainedTurns <= 0 {
			continue
		}
		ctx := sh.Bytes
		if c := st.ex.ContextChars; c > 0 {
			ctx = min(ctx, c*(sh.UserTurns+2*sh.CodeTurns))
		}
		// One call per code turn that lacks its own explanation, taken
		// as the later ones (the writer's first answers explain most).
		for i := 1 + sh.ExplainedTurns; i <= sh.CodeTurns; i++ {
			t.Add(1, tmpl+ctx*i/sh.CodeTurns, 80)
		}
	}
	return t.Usage(), in
}
