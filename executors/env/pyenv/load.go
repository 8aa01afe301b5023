package pyenv

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/codefeedback/codefeedback/executors/env"
)

// mbppRecord is one entry of InterCode's ic_mbpp.json (a JSON array).
type mbppRecord struct {
	Query         string   `json:"query"`
	Gold          string   `json:"gold"`
	Tests         []string `json:"tests"`
	TaskID        int      `json:"task_id"`
	TestSetupCode string   `json:"test_setup_code"`
}

// LoadMBPP reads InterCode's ic_mbpp.json. Task ids are "ic_mbpp/<index>"
// (InterCode's trajectories use the index, not MBPP's task_id, which goes
// into Setup["mbpp_task_id"]).
func LoadMBPP(path string) ([]env.Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []mbppRecord
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("not an ic_mbpp JSON array: %w", err)
	}
	tasks := make([]env.Task, 0, len(recs))
	for i, r := range recs {
		if r.Query == "" || len(r.Tests) == 0 {
			return nil, fmt.Errorf("record %d: query and tests are required", i)
		}
		tests, _ := json.Marshal(r.Tests)
		tasks = append(tasks, env.Task{
			ID: "ic_mbpp/" + strconv.Itoa(i), Env: "python", Dataset: "ic_mbpp", Index: i,
			Query: r.Query, Gold: r.Gold,
			Setup: map[string]string{
				env.SetupTests: string(tests), env.SetupTestSetup: r.TestSetupCode,
				env.SetupEntryPoint: GoldName(r.Gold, r.Tests), "mbpp_task_id": strconv.Itoa(r.TaskID),
				env.SetupSourceFile: path,
			},
		})
	}
	return tasks, nil
}
