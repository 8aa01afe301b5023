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

// upper is an example per-item stage: a type with an Each method and, as
// an optional capability, a Version.
type upper struct{ o UpperOptions }

func (u upper) Version() any { return "upper-v1" } // prompt texts would go here

func (u upper) Each(ctx context.Context, in pipeline.Item) ([]pipeline.Item, error) {
	q, err := pipeline.As[schema.Query](in, pipeline.KindQuery)
	if err != nil {
		return nil, pipeline.Permanent(err) // the same input fails the same way
	}
	q.Text = strings.ToUpper(q.Text) + u.o.Suffix
	out, err := pipeline.QueryItem(q)
	return []pipeline.Item{out}, err
}

// An example per-item stage: one file, no caching, retry or file code.
func ExampleRegister() {
	pipeline.Register("example-upper", UpperOptions{Suffix: "!"}, func(o UpperOptions, svc *pipeline.Services) (upper, error) {
		return upper{o}, nil
	})
	fmt.Println(strings.Contains(strings.Join(pipeline.Stages(), ","), "example-upper"))
	// Output: true
}
