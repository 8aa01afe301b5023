package upper

import (
	"context"

	"github.com/codefeedback/codefeedback/internal/report/section"
)

// init registers the stage's report section in one line: the report finds
// it by the stage type in the run's manifest, and names no stage itself.
// Without it the stage would get the generic charts of its statistics.
func init() {
	section.Register(section.Spec{Type: "upper", Title: "Upper: shouted queries", Build: buildSection})
}

// buildSection draws one stage instance's part of the report from the
// statistics it recorded: the queries per word count ("words/N").
func buildSection(_ context.Context, s section.Stage, in *section.Instance) error {
	if words := section.Under(s.Stats, "words/"); len(words) > 0 {
		in.Charts = append(in.Charts, section.Chart{ID: section.ChartID(s.Name, "words"),
			Title: "Queries per word count", Bars: section.Bars(words), Histogram: true})
	}
	return nil
}
