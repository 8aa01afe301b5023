package filter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/pipeline/llm"
	"github.com/codefeedback/codefeedback/prompts"
	"github.com/codefeedback/codefeedback/schema"
)

// DedupOptions are the settings of the dedup stage.
type DedupOptions struct {
	// Threshold is the estimated Jaccard similarity of character shingle
	// sets at or above which a query is a near-duplicate of an earlier one
	// (0 = exact duplicates only).
	Threshold float64 `yaml:"threshold" json:"threshold"`
	// Shingle is the character n-gram length.
	Shingle int `yaml:"shingle" json:"shingle"`
	// Kinds are the item kinds deduplicated: query (default) and dialogue
	// (whole dialogues, all turns, before export). Other kinds pass.
	Kinds []string `yaml:"kinds" json:"kinds"`
	// DialogueThreshold is Threshold for dialogues: dialogues built from one
	// problem share its text and code, so only near-copies are dropped.
	DialogueThreshold float64 `yaml:"dialogue_threshold" json:"dialogue_threshold"`
}

// Validate implements pipeline.Validator.
func (o DedupOptions) Validate() error {
	if o.Threshold < 0 || o.Threshold > 1 {
		return fmt.Errorf("dedup: threshold %v: want 0..1", o.Threshold)
	}
	if o.Shingle < 1 || o.Shingle > 32 {
		return fmt.Errorf("dedup: shingle %d: want 1..32", o.Shingle)
	}
	if o.DialogueThreshold < 0 || o.DialogueThreshold > 1 {
		return fmt.Errorf("dedup: dialogue_threshold %v: want 0..1", o.DialogueThreshold)
	}
	for _, k := range o.Kinds {
		if k != pipeline.KindQuery && k != pipeline.KindDialogue {
			return fmt.Errorf("dedup: kinds: %q: want query or dialogue", k)
		}
	}
	return nil
}

// Options are the settings of the filter stage.
type Options struct {
	// Rubrics to rate with (default both: skills, effort).
	Rubrics []string `yaml:"rubrics" json:"rubrics"`
	// Rule combines the rubric scores: both, either or mean>=T.
	Rule string `yaml:"rule" json:"rule"`
	// Keep is the set of scores that count as hard enough (both/either).
	Keep []int `yaml:"keep" json:"keep"`
	// Endpoint is the model endpoint name in the `model:` section ("" =
	// the stage's route or the default).
	Endpoint string `yaml:"endpoint" json:"endpoint"`
	// Repairs is how many repair prompts follow an unreadable answer before
	// the query is recorded as unrated.
	Repairs int `yaml:"repairs" json:"repairs"`
	// Unrated says what happens to a query with an unreadable rating: drop
	// (default) or keep. Either way its rating record (score 0, raw answer)
	// is emitted and counted.
	Unrated string `yaml:"unrated" json:"unrated"`
	// MaxTokens bounds each rating answer.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// MaxUnrated is the share (0..1) of queries a rubric may leave unrated
	// (unreadable answers) before the stage fails loudly; 1 never fails.
	MaxUnrated float64 `yaml:"max_unrated" json:"max_unrated"`
}

// Validate implements pipeline.Validator.
func (o Options) Validate() error {
	if len(o.Rubrics) == 0 {
		return errors.New("filter: no rubrics")
	}
	for _, r := range o.Rubrics {
		if _, err := prompts.Get("filter_rubric_" + r); err != nil {
			return fmt.Errorf("filter: unknown rubric %q (known: %v)", r, Rubrics)
		}
	}
	if _, err := ParseRule(o.Rule, o.Keep); err != nil {
		return err
	}
	for _, k := range o.Keep {
		if k < 1 || k > 5 {
			return fmt.Errorf("filter: keep %d: scores are 1..5", k)
		}
	}
	if o.Unrated != "drop" && o.Unrated != "keep" {
		return fmt.Errorf("filter: unrated %q: want drop or keep", o.Unrated)
	}
	if o.Repairs < 0 {
		return errors.New("filter: repairs must be >= 0")
	}
	if o.MaxUnrated < 0 || o.MaxUnrated > 1 {
		return fmt.Errorf("filter: max_unrated %v: want a share between 0 and 1", o.MaxUnrated)
	}
	return nil
}

func init() {
	pipeline.Register("dedup", DedupOptions{Threshold: 0.8, Shingle: 5, Kinds: []string{pipeline.KindQuery}, DialogueThreshold: 0.9}, newDedupStage)
	pipeline.Register("filter", Options{Rubrics: Rubrics, Rule: "both", Keep: []int{4, 5}, Repairs: 1,
		Unrated: "drop", MaxTokens: 200, MaxUnrated: 0.2}, newFilterStage)
}

// dedupStage is the "dedup" stage.
type dedupStage struct {
	o   DedupOptions
	svc *pipeline.Services
}

func newDedupStage(o DedupOptions, svc *pipeline.Services) (dedupStage, error) {
	return dedupStage{o, svc}, nil
}

// Version implements pipeline.Versioner.
func (dedupStage) Version() any { return "dedup-v2" }

// All implements pipeline.AllStage.
func (st dedupStage) All(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	o, svc := st.o, st.svc
	kinds := map[string]bool{}
	for _, k := range o.Kinds {
		kinds[k] = true
	}
	dq := NewDedup(o.Threshold, o.Shingle)
	dd := NewDedup(o.DialogueThreshold, o.Shingle)
	var qids, dids []string // input index -> id, for the log
	for it, err := range in {
		if err != nil {
			return err
		}
		var (
			d          *Dedup
			ids        *[]string
			id, text   string
			statPrefix string
		)
		switch {
		case it.Kind == pipeline.KindQuery && kinds[it.Kind]:
			q, err := pipeline.As[schema.Query](it, pipeline.KindQuery)
			if err != nil {
				return err
			}
			d, ids, id, text = dq, &qids, q.ID, q.Text
			svc.Stats.Add("queries", 1)
		case it.Kind == pipeline.KindDialogue && kinds[it.Kind]:
			dl, err := pipeline.As[schema.Dialogue](it, pipeline.KindDialogue)
			if err != nil {
				return err
			}
			d, ids, id, text, statPrefix = dd, &dids, dl.ID, DialogueText(dl), "dialogues/"
			svc.Stats.Add("dialogues", 1)
		default:
			if err := emit(it); err != nil {
				return err
			}
			continue
		}
		*ids = append(*ids, id)
		v := d.Add(text)
		if v.Kind != "" {
			svc.Stats.Add(statPrefix+"dropped/"+v.Kind, 1)
			if svc.Logger != nil {
				svc.Logger.Debug("dedup: dropped", "id", id, "kind", v.Kind, "of", (*ids)[v.Of], "jaccard", v.Jaccard)
			}
			continue
		}
		svc.Stats.Add(statPrefix+"kept", 1)
		if err := emit(it); err != nil {
			return err
		}
	}
	return nil
}

// DialogueText is what near-duplicate detection compares of a dialogue:
// every turn's role and text, in order.
func DialogueText(d schema.Dialogue) string {
	var b strings.Builder
	for _, m := range d.Messages {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		b.WriteString("\n")
	}
	return b.String()
}

// Version is what besides the settings determines the filter's outputs.
type version struct {
	Prompts map[string]string `json:"prompts"`
	Model   any               `json:"model"`
}

func newFilterStage(o Options, svc *pipeline.Services) (*filterStage, error) {
	rule, err := ParseRule(o.Rule, o.Keep)
	if err != nil {
		return nil, err
	}
	ver := version{Prompts: map[string]string{}}
	for _, r := range o.Rubrics {
		t, err := prompts.Get("filter_rubric_" + r)
		if err != nil {
			return nil, err
		}
		ver.Prompts[r] = t.Version
	}
	model := ""
	if ver.Model, err = svc.ModelKey(o.Endpoint); err != nil {
		return nil, fmt.Errorf("filter: %w", err)
	}
	if p, ok := ver.Model.(llm.Params); ok {
		model = p.Model // recorded in each rating
	}

	return &filterStage{o: o, svc: svc, rule: rule, ver: ver, model: model}, nil
}

// filterStage is the "filter" stage.
type filterStage struct {
	o     Options
	svc   *pipeline.Services
	rule  Rule
	ver   version
	model string

	once     sync.Once
	rater    *Rater
	raterErr error

	// Observe's state: ratings of one query come before its query item.
	pending        string // query id whose ratings were seen last
	pendingUnrated bool
}

// Version implements pipeline.Versioner.
func (st *filterStage) Version() any { return st.ver }

// UsesModel implements pipeline.ModelUser.
func (st *filterStage) UsesModel() bool { return st.svc.Model != nil }

func (st *filterStage) getRater() (*Rater, error) {
	o, svc := st.o, st.svc
	st.once.Do(func() {
		chat, err := llm.ForStage(svc, o.Endpoint)
		if err != nil {
			st.raterErr = err // no model: Check says once that every query passed through
			return
		}
		st.rater, st.raterErr = NewRater(chat, st.model, o.Rubrics, o.Repairs)
		if st.rater != nil {
			st.rater.MaxTokens = o.MaxTokens
		}
	})
	return st.rater, st.raterErr
}

// Each implements pipeline.EachStage.
func (st *filterStage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	o, svc, rule := st.o, st.svc, st.rule
	if in.Kind != pipeline.KindQuery {
		pipeline.ItemStats(ctx, svc.Stats).Add(statNotQuery, 1)
		return []pipeline.Item{in}, nil
	}
	q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	r, err := st.getRater()
	if errors.Is(err, llm.ErrNoModel) {
		pipeline.ItemStats(ctx, svc.Stats).Add("skipped_no_model", 1)
		return []pipeline.Item{in}, nil
	}
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	ratings, err := r.Rate(ctx, q)
	if err != nil {
		return nil, err // the engine knows a model error's class
	}
	out := make([]pipeline.Item, 0, len(ratings)+1)
	for _, rt := range ratings {
		it, err := pipeline.RatingItem(rt)
		if err != nil {
			return nil, err
		}
		out = append(out, it)
	}
	keep, unrated := rule.Decide(ratings)
	if unrated && o.Unrated == "keep" {
		keep = true
	}
	if !keep {
		return out, nil
	}
	q.Metadata = maps.Clone(q.Metadata)
	if q.Metadata == nil {
		q.Metadata = map[string]string{}
	}
	for _, rt := range ratings {
		v := strconv.Itoa(rt.Score)
		if rt.Score == 0 {
			v = "unrated"
		}
		q.Metadata["difficulty."+rt.Rubric] = v
	}
	qi, err := pipeline.QueryItem(q)
	if err != nil {
		return nil, err
	}
	return append(out, qi), nil
}

// Estimate implements pipeline.Estimator: one call per rubric for each
// query (a repair only after an unreadable answer, not counted), its prompt
// the rubric's template and the query; every query is assumed kept, so
// stages after this one are estimated for the most they may get.
func (st *filterStage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	var u pipeline.Usage
	if st.svc.Model == nil {
		return u, in // queries pass through unrated
	}
	out := make([]pipeline.Shape, 0, len(in))
	for _, sh := range in {
		out = append(out, sh)
		if sh.Kind != pipeline.KindQuery {
			continue
		}
		for _, r := range st.o.Rubrics {
			u = u.Add(pipeline.Calls(1, pipeline.TemplateBytes(promptText, "filter_rubric_"+r)+sh.Bytes, 40))
			out = append(out, pipeline.Shape{Kind: pipeline.KindRating})
		}
	}
	return u, out
}

// Observe implements pipeline.Observer: it fills the manifest's histogram
// and counts from every output, cached or fresh. Each rubric is a gate
// ("rubric_<name>"): an unreadable answer is a rejection.
func (st *filterStage) Observe(out pipeline.Item) {
	svc := st.svc
	switch out.Kind {
	case pipeline.KindRating:
		rt, err := pipeline.As[schema.Rating](out, pipeline.KindRating)
		if err != nil {
			return
		}
		bucket := strconv.Itoa(rt.Score)
		v := gates.Verdict{}
		if rt.Score == 0 {
			bucket = "unrated"
			v = gates.Verdict{Reason: "unreadable", Detail: rt.Rubric + " rubric for " + rt.QueryID + ": " + rt.Raw}
		}
		gates.Record(svc.Stats, "rubric_"+rt.Rubric, v)
		svc.Stats.Add("score/"+rt.Rubric+"/"+bucket, 1)
		if rt.QueryID != st.pending {
			st.pending, st.pendingUnrated = rt.QueryID, false
			svc.Stats.Add("queries", 1)
			svc.Stats.Add("rated", 1)   // undone below if a rubric is unreadable
			svc.Stats.Add("dropped", 1) // undone below if the query follows
		}
		if rt.Score == 0 && !st.pendingUnrated {
			st.pendingUnrated = true
			svc.Stats.Add("unrated", 1)
			svc.Stats.Add("rated", -1)
		}
	case pipeline.KindQuery:
		if out.ID == st.pending {
			svc.Stats.Add("dropped", -1)
			st.pending = ""
		}
		svc.Stats.Add("kept", 1)
	}
}

// Gates implements pipeline.Gated: a rubric unreadable for more than
// max_unrated of the queries trips the stage instead of dropping them all
// quietly.
func (st *filterStage) Gates() []pipeline.GateRule {
	return []pipeline.GateRule{{MaxShare: st.o.MaxUnrated, Setting: "max_unrated"}}
}

// Check implements pipeline.Checker: a stage that rated nothing (no model,
// or no query among its items) says so once (pipeline.PassThrough). The
// rubric gates are the engine's (Gates).
func (st *filterStage) Check() error {
	vals, _ := st.svc.Stats.Snapshot()
	noModel, other := vals["skipped_no_model"], vals[statNotQuery]
	switch {
	case noModel > 0:
		pipeline.PassThrough(st.svc, "no_model", noModel+other,
			"no model, so no query was rated and nothing was dropped; to rate them "+llm.NoModelHint)
	case vals["queries"] == 0 && other > 0:
		pipeline.PassThrough(st.svc, "no_queries", other,
			"none of its input items is a query, so nothing was rated (records with tests are problems; "+
				"to rate instruction/output pairs import them as queries: `as: query` on the input, or `import --as query`)")
	}
	return nil
}

// statNotQuery counts the items filter passed on because they are not
// queries.
const statNotQuery = "passed_through/not_query"

// promptText returns a template's text, for estimates.
func promptText(name string) (string, error) {
	t, err := prompts.Get(name)
	return t.Text, err
}
