package filter

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"sync"

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
}

// Validate implements pipeline.Validator.
func (o DedupOptions) Validate() error {
	if o.Threshold < 0 || o.Threshold > 1 {
		return fmt.Errorf("dedup: threshold %v: want 0..1", o.Threshold)
	}
	if o.Shingle < 1 || o.Shingle > 32 {
		return fmt.Errorf("dedup: shingle %d: want 1..32", o.Shingle)
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
	return nil
}

func init() {
	pipeline.Register("dedup", DedupOptions{Threshold: 0.8, Shingle: 5}, newDedupStage)
	pipeline.Register("filter", Options{Rubrics: Rubrics, Rule: "both", Keep: []int{4, 5}, Repairs: 1,
		Unrated: "drop", MaxTokens: 200}, newFilterStage)
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
func (dedupStage) Version() any { return "dedup-v1" }

// All implements pipeline.AllStage.
func (st dedupStage) All(ctx context.Context, in iter.Seq2[pipeline.Item, error], emit func(pipeline.Item) error) error {
	o, svc := st.o, st.svc
	d := NewDedup(o.Threshold, o.Shingle)
	var ids []string // input index -> query id, for the log
	for it, err := range in {
		if err != nil {
			return err
		}
		if it.Kind != pipeline.KindQuery {
			if err := emit(it); err != nil {
				return err
			}
			continue
		}
		q, err := pipeline.As[schema.Query](it, pipeline.KindQuery)
		if err != nil {
			return err
		}
		ids = append(ids, q.ID)
		v := d.Add(q.Text)
		svc.Stats.Add("queries", 1)
		if v.Kind != "" {
			svc.Stats.Add("dropped/"+v.Kind, 1)
			if svc.Logger != nil {
				svc.Logger.Debug("dedup: dropped", "id", q.ID, "kind", v.Kind, "of", ids[v.Of], "jaccard", v.Jaccard)
			}
			continue
		}
		svc.Stats.Add("kept", 1)
		if err := emit(it); err != nil {
			return err
		}
	}
	return nil
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
			st.raterErr = err
			if errors.Is(err, llm.ErrNoModel) && svc.Logger != nil {
				svc.Logger.Warn("filter: no model, so queries pass through unrated (nothing is dropped); " +
					"to rate them " + llm.NoModelHint)
			}
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
		return []pipeline.Item{in}, nil
	}
	q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
	if err != nil {
		return nil, pipeline.Permanent(err)
	}
	r, err := st.getRater()
	if errors.Is(err, llm.ErrNoModel) {
		svc.Stats.Add("skipped_no_model", 1)
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

// Estimate implements pipeline.Estimator.
func (st *filterStage) Estimate(n int) pipeline.Usage {
	o := st.o
	// Two short prompts per query (~300 tokens in, ~40 out each).
	calls := int64(n * len(o.Rubrics))
	return pipeline.Usage{Requests: calls, PromptTokens: 300 * calls, CompletionTokens: 40 * calls}
}

// Observe implements pipeline.Observer: it fills the manifest's histogram
// and counts from every output, cached or fresh.
func (st *filterStage) Observe(out pipeline.Item) {
	svc := st.svc
	switch out.Kind {
	case pipeline.KindRating:
		rt, err := pipeline.As[schema.Rating](out, pipeline.KindRating)
		if err != nil {
			return
		}
		bucket := strconv.Itoa(rt.Score)
		if rt.Score == 0 {
			bucket = "unrated"
		}
		svc.Stats.Add("score/"+rt.Rubric+"/"+bucket, 1)
		if rt.QueryID != st.pending {
			st.pending, st.pendingUnrated = rt.QueryID, false
			svc.Stats.Add("rated", 1)
			svc.Stats.Add("dropped", 1) // undone below if the query follows
		}
		if rt.Score == 0 && !st.pendingUnrated {
			st.pendingUnrated = true
			svc.Stats.Add("unrated", 1)
		}
	case pipeline.KindQuery:
		if out.ID == st.pending {
			svc.Stats.Add("dropped", -1)
			st.pending = ""
		}
		svc.Stats.Add("kept", 1)
	}
}
