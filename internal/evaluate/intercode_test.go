package evaluate_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	_ "github.com/codefeedback/codefeedback/executors/env/sqlenv"
	"github.com/codefeedback/codefeedback/internal/evaluate"
)

// TestCanonicalInterCodeByTaskID: the canonical model answers each task
// with its own gold, even where a task's query holds another's (Spider
// task 780's holds 603's, and 780 got 603's gold and never passed) or two
// tasks ask the same question of different data.
func TestCanonicalInterCodeByTaskID(t *testing.T) {
	dump, err := filepath.Abs("testdata/shop.sql")
	if err != nil {
		t.Fatal(err)
	}
	setup := map[string]string{env.SetupDB: "shop", env.SetupDBFile: dump}
	tasks := []env.Task{
		{ID: "fixture/0", Env: "sql", Index: 0, Query: "List the items.", Gold: "SELECT name FROM item", Setup: setup},
		{ID: "fixture/1", Env: "sql", Index: 1, Query: "List the items. Only those that cost more than 10.",
			Gold: "SELECT name FROM item WHERE price > 10", Setup: setup},
		{ID: "fixture/2", Env: "sql", Index: 2, Query: "List the items.", Gold: "SELECT name FROM item ORDER BY price DESC", Setup: setup},
	}
	// The longer query first, as a search of the conversation would meet it.
	tasks[0], tasks[1] = tasks[1], tasks[0]
	e, err := evaluate.New(evaluate.Options{Model: evaluate.CanonicalModel, Concurrency: 1}, nil, nil, sandbox(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := e.RunInterCode(context.Background(), tasks, evaluate.InterCodeOptions{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range eps {
		if ep.Task.ID != tasks[i].ID || !ep.Success || len(ep.Steps) == 0 || ep.Steps[0].Action != tasks[i].Gold {
			got := ""
			if len(ep.Steps) > 0 {
				got = ep.Steps[0].Action
			}
			t.Errorf("%s: success %v with %q, want its gold %q", tasks[i].ID, ep.Success, got, tasks[i].Gold)
		}
	}
}
