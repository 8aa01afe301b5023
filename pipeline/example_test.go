package pipeline_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/codefeedback/codefeedback/schema"
)

// UpperOptions are the settings of the example stage.
type UpperOptions struct {
	Suffix string `yaml:"suffix" json:"suffix"`
}

// An example per-item stage: one file, no caching, retry or file code.
func ExampleRegister() {
	pipeline.Register("example-upper", UpperOptions{Suffix: "!"}, func(o UpperOptions, svc *pipeline.Services) (*pipeline.Stage, error) {
		return &pipeline.Stage{
			Version: "upper-v1", // prompt texts would go here
			Each: func(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
				q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
				if err != nil {
					return nil, pipeline.Permanent(err) // the same input fails the same way
				}
				q.Text = strings.ToUpper(q.Text) + o.Suffix
				out, err := pipeline.QueryItem(q)
				return []pipeline.Item{out}, err
			},
		}, nil
	})
	fmt.Println(strings.Contains(strings.Join(pipeline.Stages(), ","), "example-upper"))
	// Output: true
}
