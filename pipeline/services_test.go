package pipeline

import (
	"context"
	"sync"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/bwrap" // the sandbox whose disk= the stage must see
)

// diskSeen is the scratch size t-disk's items saw through svc.Executor.
var diskSeen sync.Map // stage name -> int64

func init() {
	Register("t-disk", fakeOptions{}, func(o fakeOptions, svc *Services) (*testEach, error) {
		return &testEach{uses: true, each: func(ctx context.Context, in Item) ([]Item, error) {
			ex, err := svc.Executor(ctx)
			if err != nil {
				return nil, err
			}
			diskSeen.Store(svc.Name, ex.Info().DiskBytes)
			return []Item{in}, nil
		}}, nil
	})
}

// TestStageSeesExecutorDisk: the executor a stage gets is the engine's
// caching wrapper over the driver, and the disk size the URL sets (which
// bounds InterCode's bash episodes) reaches the stage through it; a new
// disk= recomputes the stages that run code.
func TestStageSeesExecutorDisk(t *testing.T) {
	y := func(url string) string {
		return `
run_dir: $DIR/run
inputs: [{path: q.jsonl, format: native}]
executor: ` + url + `
stages:
  - {stage: t-disk, name: d}
outputs:
  - path: $DIR/out.jsonl
`
	}
	dir, file := setup(t, 3, y("bwrap://?pool=1&disk=1GiB"))
	for _, c := range []struct {
		url  string
		want int64
	}{
		{"bwrap://?pool=1&disk=1GiB", 1 << 30},
		{"bwrap://?pool=1&disk=300MiB", 300 << 20},
		{"bwrap://?pool=1", 256 << 20}, // bwrap's default
	} {
		writePipeline(t, file, dir, y(c.url))
		diskSeen.Delete("d")
		mustRun(t, file, RunOptions{})
		got, ok := diskSeen.Load("d")
		if !ok {
			t.Fatalf("%s: the stage ran no item (cached across a disk change?)", c.url)
		}
		if got.(int64) != c.want {
			t.Errorf("%s: the stage's executor reports disk %d, want %d", c.url, got, c.want)
		}
	}
}
