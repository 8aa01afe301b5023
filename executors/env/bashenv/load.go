package bashenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/codefeedback/codefeedback/executors/env"
)

var fsRE = regexp.MustCompile(`fs_(\d+)`)

// LoadNL2Bash reads InterCode's nl2bash_fs_N.json (a JSON array of {query,
// gold}) and the variant's setup script, docker/bash_scripts/
// setup_nl2b_fs_N.sh, found next to the data file or in InterCode's layout
// (../../docker/bash_scripts from data/nl2bash). A file without fs_N in its
// name (test_queries.json) runs on no prepared file system.
func LoadNL2Bash(path string) ([]env.Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []struct {
		Query string `json:"query"`
		Gold  any    `json:"gold"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("not an nl2bash JSON array: %w", err)
	}
	fs, script := "", ""
	if m := fsRE.FindStringSubmatch(filepath.Base(path)); m != nil {
		fs = "fs_" + m[1]
		name := "setup_nl2b_fs_" + m[1] + ".sh"
		dir := filepath.Dir(path)
		var found bool
		for _, p := range []string{filepath.Join(dir, name), filepath.Join(dir, "bash_scripts", name), filepath.Join(dir, "..", "..", "docker", "bash_scripts", name)} {
			if b, err := os.ReadFile(p); err == nil {
				script, found = string(b), true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("setup script %s not found next to %s or in ../../docker/bash_scripts", name, path)
		}
	}
	tasks := make([]env.Task, 0, len(recs))
	for i, r := range recs {
		gold := ""
		switch g := r.Gold.(type) {
		case string:
			gold = g
		case []any:
			// InterCode joins a list of gold commands with ";".
			for j, x := range g {
				if j > 0 {
					gold += ";"
				}
				gold += fmt.Sprint(x)
			}
		}
		if r.Query == "" || gold == "" {
			return nil, fmt.Errorf("record %d: query and gold are required", i)
		}
		id := "nl2bash/" + strconv.Itoa(i)
		if fs != "" {
			id = "nl2bash/" + fs + "/" + strconv.Itoa(i)
		}
		tasks = append(tasks, env.Task{
			ID: id, Env: "bash", Dataset: "nl2bash", Index: i, Query: r.Query, Gold: gold,
			Setup: map[string]string{env.SetupFS: fs, env.SetupFSScript: script, env.SetupSourceFile: path},
		})
	}
	return tasks, nil
}
