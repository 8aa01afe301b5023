// Package env holds InterCode-style task environments: an agent resets an
// environment with a task, then steps it with actions (shell commands, SQL
// statements, Python cells, `submit`), and gets back an observation, a reward
// in [0, 1], whether the episode is done, and whether the action ran without
// error. Environments (bash, sql, python, ctf) live in subpackages and
// register a factory here by name, like the executors drivers; loaders for
// InterCode's published data files register by dataset name.
//
// Rewards follow InterCode's rules (see each subpackage) but are never
// computed inside an interpreter the agent's code controls.
package env

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/registry"
)

// Task is one InterCode task, loaded from InterCode's published data formats.
type Task struct {
	ID      string            `json:"id"`      // e.g. "nl2bash/fs_1/12", "spider/dev/345", "ic_mbpp/17"
	Env     string            `json:"env"`     // "bash" | "sql" | "python" | "ctf"
	Dataset string            `json:"dataset"` // "nl2bash", "spider", "bird", "wikisql", "ic_mbpp", "ctf"
	Index   int               `json:"index"`   // position in the data file (InterCode's task_id)
	Query   string            `json:"query"`   // the natural-language instruction shown to the agent
	Gold    string            `json:"gold"`    // gold action: command, SQL, solution code, or the flag (ctf)
	Setup   map[string]string `json:"setup,omitempty"`
}

// Setup keys the environments read. Loaders fill them; an environment says
// which it needs and fails Reset with a clear error when one is missing.
const (
	SetupFS         = "fs"          // bash: file-system variant name ("fs_1")
	SetupFSScript   = "fs_script"   // bash: the script that builds the variant (InterCode's setup_nl2b_fs_N.sh)
	SetupDB         = "db"          // sql: database name
	SetupDBFile     = "db_file"     // sql: path of the MySQL dump (or a .sqlite file) holding db
	SetupTests      = "tests"       // python: JSON array of test statements
	SetupTestSetup  = "test_setup"  // python: code run before the tests
	SetupEntryPoint = "entry_point" // python: the gold function's name
	SetupDir        = "dir"         // ctf: host directory with the task's files
	SetupCommand    = "setup_cmd"   // ctf: a command run before the agent's first action
	SetupHardness   = "hardness"    // sql (spider): easy|medium|hard|extra
	SetupSourceFile = "source_file" // the data file the task came from
)

// StepResult.Info keys of a sql statement that returned rows: how many it
// returned and how many of them the observation's table shows (fewer when
// the table was cut). Closing turns state counts from these, never from
// the rendered text.
const (
	InfoRowCount  = "row_count"
	InfoRowsShown = "rows_shown"
	// InfoPyRows: the rows as InterCode's observation shows them (Python's
	// str() of the row tuples), for results of at most 200 rows.
	InfoPyRows = "py_rows"
)

// StepResult.Info keys of a sql score: the gold's own error where it does
// not run, and how many answers the gold's ORDER BY ... LIMIT allows where
// its sort keys tie across the cut (any of them scores 1).
const (
	InfoGoldError = "gold_error"
	InfoTies      = "tied_answers"
)

// InfoFirstDef, in a python score's Info, is the gold's first def, to which
// InterCode bound the submitted function (beside "entry", the function the
// tests call, and "submitted_function").
const InfoFirstDef = "first_def"

// StepResult is what one action yields.
type StepResult struct {
	Observation string         `json:"observation"` // what the agent sees (output, error, rows as a table)
	Reward      float64        `json:"reward"`      // InterCode's reward, in [0,1]; 0 until something is scored
	Done        bool           `json:"done"`        // the episode ended (submit)
	Valid       bool           `json:"valid"`       // InterCode's valid_action: the action ran without error
	Info        map[string]any `json:"info,omitempty"`
}

// Env runs one episode at a time. Not safe for concurrent use: open one Env
// per episode in flight.
type Env interface {
	// Reset ends any episode and starts a fresh one for t (fresh file
	// system, database or interpreter). It returns the initial observation:
	// the task's query.
	Reset(ctx context.Context, t Task) (string, error)
	// Step runs one action. "submit" (python: "submit FUNC", ctf:
	// "submit FLAG") scores the episode and ends it; a step after the end
	// is an error. A failing action is data (Valid false), not an error;
	// an error means the environment itself failed.
	Step(ctx context.Context, action string) (StepResult, error)
	// Score rates the current state as `submit arg` would, without ending
	// the episode: InterCode's n-turn experiments submit after every action
	// and go on.
	Score(ctx context.Context, arg string) (StepResult, error)
	Close() error
}

// Options configure an environment. Zero values take defaults.
type Options struct {
	// Limits bound each action (per cell or command); the zero value takes
	// the executor's defaults, with a 10 s timeout as InterCode's.
	Limits executors.Limits
	// CacheDir holds prepared file systems and databases, built once per
	// variant and reused; empty means a directory under the user cache.
	CacheDir string
	// Params are environment-specific settings, e.g. sql's "backend"
	// (sqlite|mariadb) and "dsn".
	Params map[string]string
}

// Factory opens an environment over ex. ex stays owned by the caller and must
// outlive the Env.
type Factory func(ctx context.Context, ex executors.Executor, opts Options) (Env, error)

// Loader reads one of InterCode's data files (path) into tasks.
type Loader func(path string) ([]Task, error)

var (
	envs    = registry.Named[Factory]{Kind: "env: environment"}
	loaders = registry.Named[loaderEntry]{Kind: "env: loader"}
)

type loaderEntry struct {
	env  string
	load Loader
}

// Register makes an environment available by name. Duplicates panic.
func Register(name string, f Factory) { envs.Add(name, f) }

// RegisterLoader makes a dataset's loader available; env is the environment
// its tasks run in. Duplicates panic.
func RegisterLoader(dataset, env string, l Loader) { loaders.Add(dataset, loaderEntry{env, l}) }

// Names lists registered environments.
func Names() []string { return envs.Names() }

// Datasets lists registered loaders.
func Datasets() []string { return loaders.Names() }

// Open opens the named environment over ex.
func Open(ctx context.Context, name string, ex executors.Executor, opts Options) (Env, error) {
	f, ok := envs.Get(name)
	if !ok {
		return nil, fmt.Errorf("env: unknown environment %q (registered: %v)", name, Names())
	}
	e, err := f(ctx, ex, opts)
	if err != nil {
		return nil, fmt.Errorf("env: opening %s: %w", name, err)
	}
	return e, nil
}

// LoadTasks reads an InterCode data file. dataset names the loader ("ic_mbpp",
// "nl2bash", "spider", "bird", "wikisql", "ctf"); empty guesses it from the
// file name.
func LoadTasks(path, dataset string) ([]Task, error) {
	if dataset == "" {
		dataset = GuessDataset(path)
	}
	l, ok := loaders.Get(dataset)
	if !ok {
		return nil, fmt.Errorf("env: no loader for dataset %q (registered: %v; is its environment package imported?)", dataset, Datasets())
	}
	ts, err := l.load(path)
	if err != nil {
		return nil, fmt.Errorf("env: loading %s tasks from %s: %w", dataset, path, err)
	}
	return ts, nil
}

// GuessDataset names the dataset of an InterCode data file by its name:
// nl2bash_fs_1.json -> nl2bash, ic_spider_dev.json -> spider, ...
func GuessDataset(path string) string {
	p := strings.ToLower(path)
	for _, d := range []string{"nl2bash", "spider", "bird", "wikisql", "mbpp", "ctf"} {
		if strings.Contains(p, d) {
			if d == "mbpp" {
				return "ic_mbpp"
			}
			return d
		}
	}
	return ""
}

// Observation renders a result as the text an agent sees: stdout, stderr,
// and a note for a timeout, OOM or signal.
func Observation(r executors.Result) string {
	var b strings.Builder
	b.WriteString(r.Stdout)
	add := func(s string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	if r.Stderr != "" {
		add(r.Stderr)
	}
	switch {
	case r.TimedOut:
		add("[execution timed out]")
	case r.OOM:
		add("[out of memory]")
	case r.Signal != "":
		add("[killed by " + r.Signal + "]")
	}
	return b.String()
}

// SubmitArg splits a submit action: ("submit min_cost") -> ("min_cost", true).
// InterCode takes the word after "submit"; a bare "submit" gives "".
func SubmitArg(action string) (string, bool) {
	a := strings.TrimSpace(action)
	if a != "submit" && !strings.HasPrefix(a, "submit ") && !strings.HasPrefix(a, "submit\t") {
		return "", false
	}
	f := strings.Fields(a)
	if len(f) < 2 {
		return "", true
	}
	return f[1], true
}

// Round2 rounds as Python's round(x, 2): correctly rounded from the
// float's exact value, ties to even (strconv does the same).
func Round2(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 2, 64), 64)
	return r
}

// CTFImage is the docker image the ctf environment runs in (`make
// ctf-image`): the sandbox image plus the tools CTF tasks use.
const CTFImage = "codefeedback-sandbox:ctf"

// BashImage is the docker image of InterCode's Bash userland (`make
// nl2bash-image`: the tools its image had, no compiler), which the bash
// environment runs in on docker.
const BashImage = "codefeedback-sandbox:nl2bash"

// ExecutorURL is the executor URL to open for envName given the one the
// user chose: on a driver that runs images (docker) with no image named,
// ctf runs CTFImage and bash BashImage; everything else is unchanged.
func ExecutorURL(envName, raw string) string {
	switch envName {
	case "ctf":
		return executors.WithImage(raw, CTFImage)
	case "bash":
		return executors.WithImage(raw, BashImage)
	}
	return raw
}

// OpenExecutor opens ExecutorURL(envName, raw). Where the bash image is
// missing it opens raw instead and says so through warn (the tasks then
// see the image the user named); a missing CTF image is an error, since
// CTF tasks need its tools.
func OpenExecutor(ctx context.Context, envName, raw string, warn func(string)) (executors.Executor, error) {
	u := ExecutorURL(envName, raw)
	ex, err := executors.Open(ctx, u)
	if err == nil || u == raw || envName != "bash" {
		return ex, err
	}
	if warn != nil {
		warn(fmt.Sprintf("%v; bash tasks run on %s (`make nl2bash-image` builds InterCode's image)", err, raw))
	}
	return executors.Open(ctx, raw)
}
