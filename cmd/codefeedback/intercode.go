package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	_ "github.com/codefeedback/codefeedback/executors/env/all"
	"github.com/codefeedback/codefeedback/executors/env/icdata"
)

// intercodeCmd is the `codefeedback intercode` command. Its subcommands come
// from several files (fetch and replay here, run in intercode_run.go), each
// adding itself with registerIntercode from its init; the variable is set
// before any init runs, so file order does not matter.
var intercodeCmd = &cli.Command{
	Name:  "intercode",
	Usage: "InterCode environments: fetch InterCode's data files, replay its trajectories, run agents",
}

func registerIntercode(c *cli.Command) {
	intercodeCmd.Subcommands = append(intercodeCmd.Subcommands, c)
}

func init() {
	register(intercodeCmd)
	registerIntercode(fetchCommand())
	registerIntercode(replayCommand())
}

// taskFormatFlag is --format, the loader that reads a task file.
func taskFormatFlag(dest *string) *cli.StringFlag {
	return &cli.StringFlag{Name: "format", Usage: "loader: tasks (JSON Lines), nl2bash, spider, bird, wikisql, ic_mbpp, ctf (default: from the file name)", Destination: dest}
}

// envParamFlag is --env-param, the environment's settings (envParams reads them).
func envParamFlag(dest *cli.StringSlice) *cli.StringSliceFlag {
	return &cli.StringSliceFlag{Name: "env-param", Usage: "environment setting KEY=VALUE (e.g. backend=mariadb for sql); repeatable", Destination: dest}
}

type fetchOptions struct {
	Dir        string
	BaseURL    string
	Only       []string
	Unverified bool
}

func fetchCommand() *cli.Command {
	var o fetchOptions
	return &cli.Command{
		Name:  "fetch",
		Usage: "download InterCode's data files (pinned commit, SHA-256 checked) into the user cache",
		Description: "Files keep their repository paths under --dir (default $CODEFEEDBACK_INTERCODE_DIR or\n" +
			"~/.cache/codefeedback/intercode/<commit>); files already present with the right checksum are kept.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "destination directory", Destination: &o.Dir},
			&cli.StringFlag{Name: "base-url", Usage: "download from this URL instead of the pinned GitHub commit (an https:// mirror, or hf://datasets/OWNER/NAME[@REV])", Destination: &o.BaseURL},
			&cli.StringSliceFlag{Name: "only", Usage: "path prefixes to fetch, e.g. data/sql/spider/ (repeatable)"},
			&cli.BoolFlag{Name: "unverified", Usage: "also fetch the files with no pinned checksum (BIRD's dump, large CTF images)", Destination: &o.Unverified},
		},
		Action: func(c *cli.Context) error {
			o.Only = c.StringSlice("only")
			return runFetch(c.Context, o, c.App.Writer)
		},
	}
}

func runFetch(ctx context.Context, o fetchOptions, w io.Writer) error {
	m := icdata.Pinned()
	if o.Dir == "" {
		d, err := icdata.DefaultDir(m)
		if err != nil {
			return err
		}
		o.Dir = d
	}
	rep, err := icdata.Fetch(ctx, m, icdata.Options{Dir: o.Dir, BaseURL: o.BaseURL, Only: o.Only, Unverified: o.Unverified, Log: w})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s@%.12s in %s: %d fetched (%d bytes), %d already present\n", m.Repository, m.Commit, o.Dir, rep.Fetched, rep.Bytes, rep.Present)
	if !o.Unverified && len(m.Unavailable) > 0 && len(o.Only) == 0 {
		fmt.Fprintf(w, "not fetched (no pinned checksum; --unverified takes them): %s\n", strings.Join(m.Unavailable, ", "))
	}
	return nil
}

type replayOptions struct {
	Data    string
	Tasks   string
	Driver  string
	Backend string
	Order   string
	Ties    string
	PyEntry string
	Shell   string
	System  string
	Age     string
	Limit   int
	Out     string
	JSON    bool
	Verbose bool
}

func replayCommand() *cli.Command {
	var o replayOptions
	return &cli.Command{
		Name:      "replay",
		Usage:     "re-execute trajectories in InterCode's log format and report reward and success agreement",
		ArgsUsage: "TRAJECTORY.json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "data", Usage: "InterCode data directory (default: the fetch cache)", Destination: &o.Data},
			&cli.StringFlag{Name: "tasks", Usage: "task file (default: the one the trajectories name, under --data)", Destination: &o.Tasks},
			executorFlag(&o.Driver),
			&cli.StringFlag{Name: "sql-backend", Value: "mariadb", Usage: "sql: mariadb (InterCode's MySQL semantics) or sqlite", Destination: &o.Backend},
			&cli.StringFlag{Name: "sql-order", Value: "ordered", Usage: "sql: apply the rank correlation only where the gold has ORDER BY (ordered), or always as InterCode's code does (always; MariaDB orders GROUP BY results unlike InterCode's MySQL 8)", Destination: &o.Order},
			&cli.StringFlag{Name: "sql-ties", Value: "any", Usage: "sql: where the gold's ORDER BY ... LIMIT cuts through tied sort keys, accept any tied answer (any) or only the rows the gold's run returned (gold; InterCode's MySQL picked arbitrarily among them)", Destination: &o.Ties},
			&cli.StringFlag{Name: "python-entry", Value: "first", Usage: "python: InterCode's rule (first: the submitted function is bound to the gold's first def, and the gold's code is left in the agent's interpreter after each reward, as InterCode's reward runs it there) or the function the tests call in a clean replay of the agent's cells (tested; how agents of our own are scored); disagreements from InterCode's binding are reported as intercode_alias", Destination: &o.PyEntry},
			&cli.StringFlag{Name: "bash-shell", Value: "intercode", Usage: "bash: run each action as InterCode did (intercode: its own /bin/bash -c 'ACTION' split by shlex, only cd carried over) or in our persistent shell (session)", Destination: &o.Shell},
			&cli.StringFlag{Name: "bash-system", Usage: "bash on bwrap: the system root whose /usr, /etc, /var the tasks see (default: the one 'make nl2bash-image' builds, else the host's; host: the host's)", Destination: &o.System},
			&cli.StringFlag{Name: "bash-age", Usage: "bash: how long before the run the task's files were made (e.g. 21m, as InterCode's fs_3 image was built before its run; default 0)", Destination: &o.Age},
			&cli.IntFlag{Name: "limit", Usage: "replay only the first N trajectories", Destination: &o.Limit},
			&cli.StringFlag{Name: "out", Usage: "write our re-executed trajectories here (InterCode's format)", Destination: &o.Out},
			&cli.BoolFlag{Name: "json", Usage: "print the per-trajectory results as JSON lines", Destination: &o.JSON},
			&cli.BoolFlag{Name: "verbose", Aliases: []string{"v"}, Usage: "print every disagreeing step", Destination: &o.Verbose},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, fmt.Errorf("replay: want one trajectory file"))
			}
			return runReplay(c.Context, o, c.Args().First(), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// ReplaySummary is what replay reports.
type replaySummary struct {
	Trajectories, Steps, StepsAgree   int
	LoggedSuccess, OurSuccess, Agreed int
	SkippedTasks                      int
	// Of the trajectories that needed the network (ReplayResult.Network).
	Network, NetLogged, NetOurs, NetAgreed int
	// Success disagreements and disagreeing steps by cause
	// (env.Disagree*); of the trajectories whose success disagrees for a
	// cause a replay cannot reproduce (env.Unreproducible).
	Causes, StepCauses                  map[string]int
	Unrepro, UnreproLogged, UnreproOurs int
}

func runReplay(ctx context.Context, o replayOptions, path string, w, progress io.Writer) error {
	if err := checkInputFile("intercode replay", path); err != nil {
		return err
	}
	trs, err := env.ReadTrajectories(path)
	if err != nil {
		return inputOr("intercode replay", path, err, exitBadData) // the file is there: its content is wrong
	}
	if len(trs) == 0 {
		return withCode(exitBadData, fmt.Errorf("intercode replay: %s holds no trajectories", path))
	}
	if o.Limit > 0 && len(trs) > o.Limit {
		trs = trs[:o.Limit]
	}
	envName := env.EnvName(trs[0].Environment)
	taskFile := o.Tasks
	if taskFile == "" {
		dir := o.Data
		if dir == "" {
			if dir, err = icdata.DefaultDir(icdata.Pinned()); err != nil {
				return err
			}
		}
		rel := env.DataFileFor(trs[0].Dataset)
		if rel == "" {
			return withCode(exitUsage, fmt.Errorf("replay: cannot tell the task file of dataset %q (use --tasks)", trs[0].Dataset))
		}
		taskFile = filepath.Join(dir, filepath.FromSlash(rel))
	}
	tasks, err := env.LoadTasks(taskFile, "")
	if err != nil {
		return withCode(readCode(err), fmt.Errorf("intercode replay: %w (run `codefeedback intercode fetch` first, or pass --data/--tasks)", err))
	}
	ex, err := openCheckExecutor(ctx, "intercode replay", envName, o.Driver, 2, progress)
	if err != nil {
		return err
	}
	defer ex.Close()
	params := map[string]string{}
	switch envName {
	case "sql":
		// A gold that does not run scores as an empty result, as
		// InterCode's did (WikiSQL): the replay reproduces its rule.
		params["backend"], params["order"], params["ties"], params["gold_errors"] = o.Backend, o.Order, o.Ties, "empty"
	case "python":
		params["entry"] = o.PyEntry
	case "bash":
		params["shell"], params["system"], params["age"] = o.Shell, o.System, o.Age
	}
	e, err := env.Open(ctx, envName, ex, env.Options{Params: params})
	if err != nil {
		return err
	}
	defer e.Close()
	sum := replaySummary{Causes: map[string]int{}, StepCauses: map[string]int{}}
	var ours []env.Trajectory
	enc := json.NewEncoder(w)
	for _, tr := range trs {
		if env.EnvName(tr.Environment) != envName {
			return fmt.Errorf("replay: %s mixes environments (%s, %s)", path, trs[0].Environment, tr.Environment)
		}
		if tr.TaskID < 0 || tr.TaskID >= len(tasks) {
			sum.SkippedTasks++
			fmt.Fprintf(w, "task %d: not in %s (%d tasks); skipped\n", tr.TaskID, taskFile, len(tasks))
			continue
		}
		task := tasks[tr.TaskID]
		if _, err := e.Reset(ctx, task); err != nil {
			return err
		}
		res, err := env.Replay(ctx, e, envName, tr)
		if err != nil {
			return err
		}
		sum.Trajectories++
		for _, s := range res.Steps {
			sum.Steps++
			if s.Agree {
				sum.StepsAgree++
				continue
			}
			sum.StepCauses[s.Cause]++
			if o.Verbose && !o.JSON {
				fmt.Fprintf(w, "task %d: %q: logged %.2f, ours %.2f (%s)\n  ours: %s\n  logged: %s\n", tr.TaskID, clip(s.Action, 120), s.Logged, s.Ours, s.Cause, clip(s.OurObs, 300), clip(s.LoggedObs, 300))
			}
		}
		if res.Cause != "" {
			sum.Causes[res.Cause]++
			if !o.JSON {
				fmt.Fprintf(w, "task %d: success InterCode %v, ours %v: %s%s\n", tr.TaskID, res.LoggedSuccess, res.OurSuccess, res.Cause, causeEvidence(res))
			}
			if env.Unreproducible(res.Cause) {
				sum.Unrepro++
				sum.UnreproLogged += b2i(res.LoggedSuccess)
				sum.UnreproOurs += b2i(res.OurSuccess)
			}
		}
		if res.LoggedSuccess {
			sum.LoggedSuccess++
		}
		if res.OurSuccess {
			sum.OurSuccess++
		}
		if res.LoggedSuccess == res.OurSuccess {
			sum.Agreed++
		}
		if res.Network {
			sum.Network++
			sum.NetLogged += b2i(res.LoggedSuccess)
			sum.NetOurs += b2i(res.OurSuccess)
			sum.NetAgreed += b2i(res.LoggedSuccess == res.OurSuccess)
		}
		ours = append(ours, res.Ours)
		if progress != nil && sum.Trajectories%25 == 0 {
			fmt.Fprintf(progress, "replayed %d/%d (successes: InterCode %d, ours %d)\n", sum.Trajectories, len(trs), sum.LoggedSuccess, sum.OurSuccess)
		}
		if o.JSON {
			enc.Encode(res)
		}
	}
	if o.Out != "" {
		if err := env.WriteTrajectories(o.Out, ours); err != nil {
			return err
		}
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return 100 * float64(a) / float64(b)
	}
	fmt.Fprintf(w, "%s (%s, %s): %d trajectories, %d steps\n", filepath.Base(path), envName, taskFile, sum.Trajectories, sum.Steps)
	fmt.Fprintf(w, "step rewards agree: %d/%d (%.1f%%, within %.2f)\n", sum.StepsAgree, sum.Steps, pct(sum.StepsAgree, sum.Steps), env.RewardTolerance)
	fmt.Fprintf(w, "successes: InterCode %d, ours %d; success agrees on %d/%d (%.1f%%)\n", sum.LoggedSuccess, sum.OurSuccess, sum.Agreed, sum.Trajectories, pct(sum.Agreed, sum.Trajectories))
	if len(sum.Causes) > 0 {
		fmt.Fprintf(w, "success disagreements by cause: %s (%s)\n", countsText(sum.Causes), causeLegend)
		fmt.Fprintf(w, "disagreeing steps by cause: %s\n", countsText(sum.StepCauses))
		n := sum.Trajectories - sum.Unrepro
		fmt.Fprintf(w, "without the %d unreproducible (all causes but ours): InterCode %d, ours %d (%+.1f%%); success agrees on %d/%d (%.1f%%)\n",
			sum.Unrepro, sum.LoggedSuccess-sum.UnreproLogged, sum.OurSuccess-sum.UnreproOurs,
			pctDiff(sum.OurSuccess-sum.UnreproOurs, sum.LoggedSuccess-sum.UnreproLogged), sum.Agreed, n, pct(sum.Agreed, n))
	}
	if sum.Network > 0 {
		n := sum.Trajectories - sum.Network
		fmt.Fprintf(w, "needed the network, which sandboxes never reach (InterCode's containers did): %d; without them: InterCode %d, ours %d; success agrees on %d/%d (%.1f%%)\n",
			sum.Network, sum.LoggedSuccess-sum.NetLogged, sum.OurSuccess-sum.NetOurs, sum.Agreed-sum.NetAgreed, n, pct(sum.Agreed-sum.NetAgreed, n))
	}
	return nil
}

// causeLegend explains the cause names of a replay's report.
const causeLegend = "log_inconsistent: InterCode rewarded code whose own logged observation is an error (the gold its earlier reward left in the interpreter was tested; --python-entry first reproduces it); " +
	"network: needed the network sandboxes never reach; machine: times, clocks or a time limit; " +
	"tie: the gold's LIMIT cuts through tied rows; gold_error: the gold does not run here; " +
	"intercode_alias: InterCode bound the submitted function to the gold's first def, a helper its tests never call; " +
	"engine: the statement gave other rows (or an error) here than on InterCode's MySQL 8; " +
	"gold_there: the same rows scored differently, so the gold's result differed there; ours: unexplained"

// causeEvidence quotes what names a success disagreement's cause: the
// first disagreeing step's logged observation where the log contradicts
// itself.
func causeEvidence(res env.ReplayResult) string {
	for _, s := range res.Steps {
		if !s.Agree && s.Cause == res.Cause && s.Cause == env.DisagreeLog {
			return fmt.Sprintf(" (logged reward %.2f over its own observation %s)", s.Logged, clip(s.LoggedObs, 100))
		}
	}
	return ""
}

func countsText(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var out []string
	for _, k := range ks {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// pctDiff is how far ours is from InterCode's, in percent of InterCode's.
func pctDiff(ours, logged int) float64 {
	if logged == 0 {
		return 0
	}
	return 100 * float64(ours-logged) / float64(logged)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// openEnvExecutor opens the executor for envName (env.OpenExecutor: ctf
// and bash on docker run their images), warnings to warn.
func openEnvExecutor(ctx context.Context, envName, raw string, warn io.Writer) (executors.Executor, error) {
	return env.OpenExecutor(ctx, envName, raw, func(msg string) { fmt.Fprintf(warn, "warning: %s\n", msg) })
}
