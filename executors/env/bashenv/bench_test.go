package bashenv_test

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// BenchmarkEpisode: episodes per second on bwrap, each a reset, one action
// and a submit (bash: which runs the gold command on the second sandbox).
func BenchmarkEpisode(b *testing.B) {
	ex := envtest.BenchBwrap(b, 1)
	bash := envtest.Tasks(b, "testdata/nl2bash_fs_1.json")[1]
	ctf := envtest.Tasks(b, "testdata/ctf/ic_ctf.json")[0]
	for name, ep := range map[string]envtest.Episode{
		"bash": {Task: bash, Actions: []string{bash.Gold}, Submit: "submit"},
		"ctf":  {Task: ctf, Actions: []string{"python3 reveal.py"}, Submit: "submit " + ctf.Gold},
	} {
		b.Run(name, func(b *testing.B) {
			e, err := env.Open(context.Background(), name, ex, env.Options{CacheDir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			envtest.BenchEpisodes(b, e, ep)
		})
	}
}
