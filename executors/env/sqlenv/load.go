package sqlenv

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
)

// loader reads InterCode's SQL task files (ic_spider_dev.json, ic_bird.json,
// ic_wikisql_dev.json: JSON arrays with query, gold, db and extra fields).
// The database dump is the .sql file beside the data file (the one whose
// name has "dbs" where there are several).
func loader(dataset string) env.Loader {
	return func(path string) ([]env.Task, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var recs []map[string]any
		if err := json.Unmarshal(data, &recs); err != nil {
			return nil, fmt.Errorf("not a JSON array of tasks: %w", err)
		}
		dump, err := findDump(path)
		if err != nil {
			return nil, err
		}
		tasks := make([]env.Task, 0, len(recs))
		for i, r := range recs {
			q, _ := r["query"].(string)
			g, _ := r["gold"].(string)
			db, _ := r["db"].(string)
			if q == "" || db == "" {
				return nil, fmt.Errorf("record %d: query and db are required", i)
			}
			setup := map[string]string{env.SetupDB: db, env.SetupDBFile: dump, env.SetupSourceFile: path}
			for _, k := range []string{"hardness", "difficulty", "evidence", "question_id"} {
				if v, ok := r[k].(string); ok {
					setup[k] = v
				}
			}
			tasks = append(tasks, env.Task{
				ID: dataset + "/" + strconv.Itoa(i), Env: "sql", Dataset: dataset, Index: i,
				Query: q, Gold: g, Setup: setup,
			})
		}
		return tasks, nil
	}
}

func findDump(path string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.sql"))
	switch len(m) {
	case 0:
		return "", fmt.Errorf("no MySQL dump (*.sql) beside %s", path)
	case 1:
		return m[0], nil
	}
	for _, p := range m {
		if strings.Contains(filepath.Base(p), "dbs") {
			return p, nil
		}
	}
	return "", fmt.Errorf("several .sql files beside %s and none named *dbs*: %v", path, m)
}

func defaultCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "codefeedback", "intercode")
}
