package sqlenv_test

import (
	"os"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// BenchmarkEpisode: episodes per second, each a reset, the gold query and a
// submit, on the sqlite backend (bwrap) and the mariadb backend.
func BenchmarkEpisode(b *testing.B) {
	ex := envtest.BenchBwrap(b, 1)
	var eps []envtest.Episode
	for _, t := range envtest.Tasks(b, "testdata/ic_spider_dev.json")[:4] {
		eps = append(eps, envtest.Episode{Task: t, Actions: []string{t.Gold}, Submit: "submit"})
	}
	backends := []string{"sqlite"}
	if _, err := os.Stat("/run/mysqld/mysqld.sock"); err == nil {
		backends = append(backends, "mariadb")
	}
	for _, be := range backends {
		b.Run(be, func(b *testing.B) {
			e := envtest.Open(b, "sql", ex, env.Options{CacheDir: b.TempDir(), Params: map[string]string{"backend": be}})
			envtest.BenchEpisodes(b, e, eps...)
		})
	}
}
