package pyenv_test

import (
	"context"
	"sync"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
	"github.com/codefeedback/codefeedback/executors/env/pyenv"
)

// TestRealGold scores InterCode's gold solutions on its own ic_mbpp.json
// (set CODEFEEDBACK_INTERCODE_DIR to a checkout of InterCode's repository or
// to the cache `codefeedback intercode fetch` fills). It reports the tasks
// whose gold does not score 1; InterCode's gold fails on a few (timeouts).
func TestRealGold(t *testing.T) {
	tasks := envtest.InterCodeTasks(t, "data/python/mbpp/ic_mbpp.json", "ic_mbpp")
	ctx := context.Background()
	ex, err := executors.Open(ctx, "bwrap://?pool=3")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	var mu sync.Mutex
	failed := 0
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for _, task := range tasks {
		wg.Add(1)
		sem <- struct{}{}
		go func(task env.Task) {
			defer wg.Done()
			defer func() { <-sem }()
			var tests []string
			_ = jsonUnmarshal(task.Setup[env.SetupTests], &tests)
			vs, err := pyenv.Judge(ctx, ex, pyenv.Submission{Cells: []string{task.Gold}, Entry: task.Setup[env.SetupEntryPoint],
				Gold: task.Gold, Tests: tests, TestSetup: task.Setup[env.SetupTestSetup]})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
				t.Logf("%s: %v", task.ID, err)
				return
			}
			for _, v := range vs {
				if !v.Pass {
					failed++
					t.Logf("%s: %s: got %q, gold %q", task.ID, v.Test, v.Got, v.Gold)
					return
				}
			}
		}(task)
	}
	wg.Wait()
	t.Logf("gold scores 1 on %d of %d tasks", len(tasks)-failed, len(tasks))
}
