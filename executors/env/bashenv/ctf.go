package bashenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
)

func init() {
	env.Register("ctf", func(ctx context.Context, ex executors.Executor, opts env.Options) (env.Env, error) {
		return NewCTF(ex, opts)
	})
	env.RegisterLoader("ctf", "ctf", LoadCTF)
}

// CTF is InterCode's capture-the-flag environment: a bash session in
// /ctf/<task id>, a fresh writable copy of the task's files (its solution/
// folder left out, as InterCode's image does), and `submit FLAG`, which
// scores 1 when FLAG equals the gold flag ignoring case. Not safe for
// concurrent use.
type CTF struct {
	ex      executors.Executor
	opts    env.Options
	base    string
	scratch *scratch
	cache   string

	key  string // the open session's task directory
	sd   *side
	task env.Task
	ep   env.Episode
}

// NewCTF returns a CTF environment over ex (whose driver must support mounts).
func NewCTF(ex executors.Executor, opts env.Options) (*CTF, error) {
	// New for its directories only: CTF tasks run on the driver's own
	// system (the CTF tools), not on the NL2Bash system root.
	params := map[string]string{"system": "host"}
	for k, v := range opts.Params {
		if k != "system" {
			params[k] = v
		}
	}
	opts.Params = params
	e, err := New(ex, opts)
	if err != nil {
		return nil, err
	}
	return &CTF{ex: ex, opts: e.opts, base: e.base, scratch: e.scratch, cache: filepath.Join(filepath.Dir(e.cacheDir), "ctf")}, nil
}

// Reset implements env.Env.
func (c *CTF) Reset(ctx context.Context, t env.Task) (string, error) {
	dir := t.Setup[env.SetupDir]
	if dir == "" {
		return "", fmt.Errorf("ctf: task %s: no task directory (setup %q)", t.ID, env.SetupDir)
	}
	name := "task"
	if t.Setup["task_id"] != "" {
		name = t.Setup["task_id"]
	}
	sum := sha256.Sum256([]byte(dir + "\x00" + name))
	key := hex.EncodeToString(sum[:8])
	if c.sd == nil || c.key != key {
		if c.sd != nil {
			c.sd.s.Close()
			c.sd = nil
		}
		tpl := filepath.Join(c.cache, key)
		if err := env.BuildOnce(tpl, func(tmp string) error { return buildCTFTemplate(dir, tmp, name) }); err != nil {
			return "", fmt.Errorf("ctf: task %s: %w", t.ID, err)
		}
		// The task's files plus the bounded allowance (scratch.go).
		rdir, err := c.scratch.area("ctf", filepath.Join(tpl, name))
		if err != nil {
			return "", fmt.Errorf("ctf: task %s: %w", t.ID, err)
		}
		if err := os.Mkdir(filepath.Join(rdir, name), 0o755); err != nil {
			return "", err
		}
		s, err := c.ex.Open(ctx, executors.Bash, executors.SessionOptions{Limits: c.opts.Limits,
			Mounts: []executors.Mount{{Source: filepath.Join(rdir, name), Target: "/ctf/" + name}}})
		if err != nil {
			return "", fmt.Errorf("ctf: task %s: opening sandbox: %w", t.ID, err)
		}
		uid, gid := -1, -1
		if o, ok := s.(executors.SandboxOwner); ok && os.Geteuid() == 0 {
			uid, gid = o.SandboxOwner()
		}
		c.sd = &side{s: s, rep: &replica{tpl: tpl, dir: rdir, names: []string{name}, uid: uid, gid: gid}}
		c.key = key
	}
	if err := c.sd.s.Reset(ctx); err != nil {
		return "", fmt.Errorf("ctf: task %s: %w", t.ID, err)
	}
	if err := c.sd.rep.Sync(); err != nil {
		return "", fmt.Errorf("ctf: task %s: resyncing files: %w", t.ID, err)
	}
	// InterCode's preprocess: cd into the task's folder, then its setup
	// command (often a download: it fails offline, as the README says).
	cmd := "cd /ctf/" + name
	if s := strings.TrimSpace(t.Setup[env.SetupCommand]); s != "" {
		cmd += "\n" + s
	}
	if _, err := c.sd.s.Exec(ctx, cmd); err != nil {
		return "", fmt.Errorf("ctf: task %s: %w", t.ID, err)
	}
	c.task = t
	c.ep.Begin()
	return t.Query, nil
}

// buildCTFTemplate copies a task's directory into tmp (a template being
// built) under name.
func buildCTFTemplate(src, tmp, name string) error {
	if err := copyTree(src, filepath.Join(tmp, name), -1, -1, nil); err != nil {
		return fmt.Errorf("copying task files: %w", err)
	}
	// The solution is not part of the task (InterCode's image deletes it).
	return os.RemoveAll(filepath.Join(tmp, name, "solution"))
}

// Step implements env.Env.
func (c *CTF) Step(ctx context.Context, action string) (env.StepResult, error) {
	if r, handled, err := c.ep.Step("ctf", action, func(arg string) (env.StepResult, error) { return c.Score(ctx, arg) }); handled {
		return r, err
	}
	obs, res, err := run(ctx, c.sd.s, action)
	if err != nil {
		return env.StepResult{}, fmt.Errorf("ctf: task %s: %w", c.task.ID, err)
	}
	return env.StepResult{Observation: obs, Valid: res.OK(), Info: map[string]any{"exit_code": res.ExitCode}}, nil
}

// Score implements env.Env: 1 when the flag matches the gold ignoring case.
func (c *CTF) Score(_ context.Context, flag string) (env.StepResult, error) {
	r := 0.0
	if flag != "" && strings.EqualFold(flag, c.task.Gold) {
		r = 1
	}
	obs := "Submitted flag is incorrect."
	if r == 1 {
		obs = "Submitted flag is correct."
	}
	return env.StepResult{Observation: obs, Reward: r, Valid: true, Info: map[string]any{"submitted_flag": flag}}, nil
}

// Close implements env.Env.
func (c *CTF) Close() error {
	if c.sd != nil {
		c.sd.s.Close()
		c.sd = nil
	}
	return c.scratch.close()
}

// LoadCTF reads InterCode's ic_ctf.json (task_id, query, gold, setup, source,
// tags, hint); each task's files are task_assets/<task_id> beside it.
func LoadCTF(path string) ([]env.Task, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var recs []struct {
		TaskID json.Number `json:"task_id"`
		Query  string      `json:"query"`
		Gold   string      `json:"gold"`
		Setup  string      `json:"setup"`
		Source string      `json:"source"`
		Hint   string      `json:"hint"`
		Tags   []string    `json:"tags"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		return nil, fmt.Errorf("not an ic_ctf JSON array: %w", err)
	}
	assets := filepath.Join(filepath.Dir(path), "task_assets")
	tasks := make([]env.Task, 0, len(recs))
	for i, r := range recs {
		id := r.TaskID.String()
		if id == "" {
			id = strconv.Itoa(i)
		}
		if r.Query == "" || r.Gold == "" {
			return nil, fmt.Errorf("record %d: query and gold are required", i)
		}
		dir := filepath.Join(assets, id)
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("task %s: its files %s: %w", id, dir, err)
		}
		tasks = append(tasks, env.Task{
			ID: "ctf/" + id, Env: "ctf", Dataset: "ctf", Index: i, Query: r.Query, Gold: r.Gold,
			Setup: map[string]string{env.SetupDir: dir, env.SetupCommand: r.Setup, "task_id": id,
				"source": r.Source, "tags": strings.Join(r.Tags, ","), "hint": r.Hint, env.SetupSourceFile: path},
		})
	}
	return tasks, nil
}
