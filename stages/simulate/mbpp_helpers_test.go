package simulate

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/shared"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/codefeedback/codefeedback/stages/correct"
)

func sharedPath(t testing.TB, rel string) string { return shared.Path(t, rel) }

// plantBugs returns, per problem id, its reference solution with one bug
// planted by the correct stage's mutation engine (kinds cycle through
// syntax, name, type and logic; a problem with no mutant of its kind takes
// the first of any kind).
func plantBugs(t testing.TB, ex executors.Executor, ps []schema.Problem) map[string]string {
	t.Helper()
	m := &correct.Mutator{Exec: ex, PerOperator: 1}
	kinds := []correct.Kind{correct.Syntax, correct.Name, correct.Type, correct.Logic}
	out := map[string]string{}
	for i, p := range ps {
		all, err := m.Mutate(context.Background(), p.Solution, 1, correct.Operators(kinds...))
		if err != nil {
			t.Fatalf("%s: mutate: %v", p.ID, err)
		}
		want := kinds[i%len(kinds)]
		for _, mu := range all {
			if mu.Kind == want {
				out[p.ID] = mu.Code
				break
			}
		}
		if out[p.ID] == "" && len(all) > 0 {
			out[p.ID] = all[0].Code
		}
		if out[p.ID] == "" {
			out[p.ID] = p.Solution + "\nundefined_name_planted_by_test\n"
		}
	}
	return out
}
