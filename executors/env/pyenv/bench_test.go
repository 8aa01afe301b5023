package pyenv_test

import (
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// BenchmarkEpisode: episodes per second on bwrap, each a reset, the gold
// solution as one cell and a submit (two judge processes).
func BenchmarkEpisode(b *testing.B) {
	ex := envtest.BenchBwrap(b, 2)
	task := envtest.Tasks(b, "testdata/ic_mbpp.json")[0]
	e := envtest.Open(b, "python", ex, env.Options{})
	envtest.BenchEpisodes(b, e, envtest.Episode{Task: task, Actions: []string{task.Gold}, Submit: "submit add"})
}
