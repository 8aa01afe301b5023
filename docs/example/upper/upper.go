// Package upper is the example stage of docs/write-a-stage.md: it upper-cases
// each query, appends a suffix and counts the queries per word count, which
// its report section (section.go) charts. The guide shows both files as
// they are; a test checks that the guide's copies are these files, runs the
// stage through the engine and renders the run's report.
package upper

import (
	"context"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// Options are the stage's settings in a pipeline file:
// `- {stage: upper, settings: {suffix: "?"}}`. Unknown keys are errors.
type Options struct {
	Suffix string `yaml:"suffix" json:"suffix"`
}

// stage implements pipeline.EachStage (one item in, zero or more out) and,
// as optional capabilities the engine finds by type assertion, Versioner
// and Estimator.
type stage struct {
	o     Options
	stats *pipeline.Stats
}

// Version is what beyond the settings changes the outputs; it joins the
// cache key. A stage with prompts returns prompts.Versions(its templates),
// so editing a template recomputes the stage.
func (s stage) Version() any { return "upper-1" }

// Each handles one item. It runs concurrently and must be a function of its
// settings, Version and input: its result is cached under their hash.
func (s stage) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
	if err != nil {
		return nil, pipeline.Permanent(err) // the same input would fail the same way: not retried
	}
	q.Text = strings.ToUpper(q.Text) + s.o.Suffix
	// A figure an item produces goes through ItemStats: it is stored with
	// the item's result and counted again when a re-run takes it from the
	// store, so the report shows the same numbers either way.
	pipeline.ItemStats(ctx, s.stats).Add("words/"+strconv.Itoa(len(strings.Fields(q.Text))), 1)
	out, err := pipeline.QueryItem(q)
	if err != nil {
		return nil, err
	}
	return []pipeline.Item{out}, nil
}

// Estimate predicts --dry-run's usage: no model calls, and each input
// passes through (a stage without Estimate is taken to do the same).
func (s stage) Estimate(in []pipeline.Shape) (pipeline.Usage, []pipeline.Shape) {
	return pipeline.Usage{}, in
}

// init registers the stage: its name in pipeline files, its default
// settings and its factory, which gets the run's services (logger, store,
// executor, model service, stats).
func init() {
	pipeline.Register("upper", Options{Suffix: "!"}, func(o Options, svc *pipeline.Services) (stage, error) {
		return stage{o: o, stats: svc.Stats}, nil
	})
}
