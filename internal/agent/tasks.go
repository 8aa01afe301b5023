package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/executors/env"
)

// NativeDataset names task files in this project's own format: JSON Lines,
// one env.Task per line.
const NativeDataset = "tasks"

// fileSetups are the Setup keys that name files; relative paths in a task
// file are relative to the file's directory.
var fileSetups = []string{env.SetupDBFile, env.SetupDir}

// SetupFSScriptFile, in a native task file, names a file holding the bash
// variant's setup script (relative to the task file); the loader reads it
// into Setup[env.SetupFSScript], so tasks sharing a script need not repeat it.
const SetupFSScriptFile = "fs_script_file"

// LoadTasks reads tasks from path: a JSON Lines file of env.Task records
// (dataset "" or "tasks", name ending in .jsonl), or any of InterCode's data
// files through env.LoadTasks (dataset names the loader; "" guesses it from
// the file name).
func LoadTasks(path, dataset string) ([]env.Task, error) {
	if dataset == NativeDataset || (dataset == "" && strings.HasSuffix(path, ".jsonl")) {
		return loadNative(path)
	}
	return env.LoadTasks(path, dataset)
}

func loadNative(path string) ([]env.Task, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("agent: tasks: %w", err)
	}
	defer f.Close()
	dir := filepath.Dir(path)
	var out []env.Task
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for line := 1; sc.Scan(); line++ {
		b := strings.TrimSpace(sc.Text())
		if b == "" {
			continue
		}
		var t env.Task
		dec := json.NewDecoder(strings.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("agent: tasks %s:%d: %w", path, line, err)
		}
		if t.ID == "" || t.Env == "" || t.Query == "" {
			return nil, fmt.Errorf("agent: tasks %s:%d: a task needs id, env and query", path, line)
		}
		if p := t.Setup[SetupFSScriptFile]; p != "" {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("agent: tasks %s:%d: %w", path, line, err)
			}
			delete(t.Setup, SetupFSScriptFile)
			t.Setup[env.SetupFSScript] = string(b)
		}
		for _, k := range fileSetups {
			if p := t.Setup[k]; p != "" && !filepath.IsAbs(p) {
				t.Setup[k] = filepath.Join(dir, p)
			}
		}
		if t.Index == 0 {
			t.Index = len(out)
		}
		out = append(out, t)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("agent: tasks %s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("agent: tasks %s: no tasks", path)
	}
	return out, nil
}
