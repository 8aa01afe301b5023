package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/internal/agent"
)

func init() {
	registerIntercode(checkGoldsCommand())
	registerIntercode(stepCommand())
}

type checkGoldsOptions struct {
	Format      string
	Driver      string
	Params      cli.StringSlice
	Concurrency int
	Limit       int
	Keep        string
	JSON        bool
}

func checkGoldsCommand() *cli.Command {
	var o checkGoldsOptions
	return &cli.Command{
		Name:      "check-golds",
		Usage:     "play every task's gold as the agent's action in its own environment and list the golds that do not score 1, with their cause",
		ArgsUsage: "TASKFILE",
		Description: "A gold that fails itself cannot tell a right answer from a wrong one. Causes: gold_error (the gold\n" +
			"does not run here: MySQL-8-only syntax on MariaDB, WikiSQL's pseudo-SQL), network (sandboxes never\n" +
			"reach it), timeout, machine (the result depends on when or where it runs: date, processes, host name), differs (anything else). SQL golds\n" +
			"whose ORDER BY ... LIMIT cuts through tied sort keys are counted as ambiguous: any tied answer\n" +
			"scores 1. --keep writes the tasks whose gold passes (JSON Lines of tasks, for --dataset and\n" +
			"--intercode). Exits 1 when a gold fails.",
		Flags: []cli.Flag{
			taskFormatFlag(&o.Format),
			executorFlag(&o.Driver),
			envParamFlag(&o.Params),
			&cli.IntFlag{Name: "concurrency", Usage: "environments in flight", Value: 2, Destination: &o.Concurrency},
			&cli.IntFlag{Name: "limit", Usage: "check only the first N tasks", Destination: &o.Limit},
			&cli.StringFlag{Name: "keep", Usage: "write the tasks whose gold passes here (JSON Lines of tasks)", Destination: &o.Keep},
			&cli.BoolFlag{Name: "json", Usage: "print every task's check as JSON lines", Destination: &o.JSON},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, fmt.Errorf("intercode check-golds: want one task file"))
			}
			return runCheckGolds(c.Context, o, c.Args().First(), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// envParams reads --env-param KEY=VALUE flags.
func envParams(cmd string, kvs []string) (map[string]string, error) {
	params := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, withCode(exitUsage, fmt.Errorf("%s: --env-param %q: want KEY=VALUE", cmd, kv))
		}
		params[k] = v
	}
	return params, nil
}

// loadEnvTasks loads a task file whose tasks all run in one environment.
func loadEnvTasks(cmd, path, format string) ([]env.Task, error) {
	if err := checkInputFile(cmd, path); err != nil {
		return nil, err
	}
	tasks, err := agent.LoadTasks(path, format)
	if err != nil {
		return nil, inputOr(cmd, path, err, exitUsage)
	}
	if !allEnv(tasks, tasks[0].Env) {
		return nil, withCode(exitUsage, fmt.Errorf("%s: %s mixes environments", cmd, path))
	}
	return tasks, nil
}

// openCheckExecutor opens the executor for envName from command cmd's
// --executor URL (a pool of pool instances unless the URL sets one): a bad
// URL is a usage error, a sandbox that does not open is unreachable.
func openCheckExecutor(ctx context.Context, cmd, envName, driver string, pool int, warn io.Writer) (executors.Executor, error) {
	raw, err := executorURL(cmd, driver, "pool", strconv.Itoa(pool))
	if err != nil {
		return nil, err
	}
	ex, err := openEnvExecutor(ctx, envName, raw, warn)
	if err != nil {
		return nil, withCode(exitUnreachable, fmt.Errorf("%s: sandbox: %w", cmd, err))
	}
	return ex, nil
}

func runCheckGolds(ctx context.Context, o checkGoldsOptions, path string, w, progress io.Writer) error {
	const cmd = "intercode check-golds"
	tasks, err := loadEnvTasks(cmd, path, o.Format)
	if err != nil {
		return err
	}
	if o.Limit > 0 && len(tasks) > o.Limit {
		tasks = tasks[:o.Limit]
	}
	params, err := envParams(cmd, o.Params.Value())
	if err != nil {
		return err
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	envName := tasks[0].Env
	ex, err := openCheckExecutor(ctx, cmd, envName, o.Driver, o.Concurrency, progress)
	if err != nil {
		return err
	}
	defer ex.Close()
	checks := make([]env.GoldCheck, len(tasks))
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	next := make(chan int)
	for range o.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := env.Open(ctx, envName, ex, env.Options{Params: params})
			if err != nil {
				mu.Lock()
				firstErr = firstOf(firstErr, err)
				mu.Unlock()
				for range next {
				}
				return
			}
			defer e.Close()
			for i := range next {
				gc, err := env.CheckGold(ctx, e, tasks[i])
				mu.Lock()
				if err != nil {
					firstErr = firstOf(firstErr, err)
				}
				checks[i] = gc
				done++
				if progress != nil && done%100 == 0 {
					fmt.Fprintf(progress, "%s: %d/%d checked\n", cmd, done, len(tasks))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range tasks {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("%s: %w", cmd, firstErr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(w)
		for _, c := range checks {
			if err := enc.Encode(c); err != nil {
				return err
			}
		}
	}
	sum := env.SummarizeGolds(checks)
	if !o.JSON {
		for _, c := range checks {
			if !c.Pass {
				fmt.Fprintf(w, "%s: reward %.2f, %s: %s\n", c.TaskID, c.Reward, c.Cause, c.Detail)
			}
		}
	}
	fmt.Fprintf(w, "%s (%s, %s): %d of %d golds score 1", path, envName, paramsText(params), sum.Passed, sum.Tasks)
	if sum.Ambiguous > 0 {
		fmt.Fprintf(w, "; %d ambiguous (ORDER BY ... LIMIT through tied keys: any tied answer scores 1)", sum.Ambiguous)
	}
	fmt.Fprintln(w)
	if n := sum.Tasks - sum.Passed; n > 0 {
		var causes []string
		for c, k := range sum.ByCause {
			causes = append(causes, fmt.Sprintf("%s %d", c, k))
		}
		sort.Strings(causes)
		fmt.Fprintf(w, "failing: %d (%s)\n", n, strings.Join(causes, ", "))
	}
	// A dataset most of whose golds do not run cannot score anything: say
	// so loudly (WikiSQL: InterCode scores such a gold as an empty result,
	// so there any empty answer scored 1).
	if g := sum.ByCause[env.CauseGoldError]; g*2 > sum.Tasks {
		fmt.Fprintf(w, "WARNING: %d of %d golds do not run in this environment: the dataset cannot tell a right answer from a wrong one; do not use it (InterCode scored such a gold as an empty result, so any empty answer scored 1.0)\n", g, sum.Tasks)
	}
	if o.Keep != "" {
		var keep []env.Task
		for i, c := range checks {
			if c.Pass {
				keep = append(keep, tasks[i])
			}
		}
		if err := writeTasks(o.Keep, keep); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		fmt.Fprintf(w, "wrote %d tasks to %s\n", len(keep), o.Keep)
	}
	if sum.Passed < sum.Tasks {
		return withCode(exitFailed, fmt.Errorf("%s: %d of %d golds do not score 1", cmd, sum.Tasks-sum.Passed, sum.Tasks))
	}
	return nil
}

func firstOf(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func paramsText(p map[string]string) string {
	if len(p) == 0 {
		return "defaults"
	}
	var kv []string
	for k, v := range p {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return strings.Join(kv, " ")
}

// writeTasks writes tasks as JSON Lines (agent.NativeDataset).
func writeTasks(path string, tasks []env.Task) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, t := range tasks {
		if err := enc.Encode(t); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

type stepOptions struct {
	Format string
	Task   string
	Driver string
	Params cli.StringSlice
	JSON   bool
}

func stepCommand() *cli.Command {
	var o stepOptions
	return &cli.Command{
		Name:      "step",
		Usage:     "run actions against one task and print each observation and reward",
		ArgsUsage: "TASKFILE ACTION...",
		Description: "Resets the task's environment, runs each ACTION in turn (a command, a SQL statement, a Python\n" +
			"cell, or submit) and prints its observation, then the reward the state would get if submitted now.\n" +
			"--task names the task by id (spider/780) or index (780).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "task", Usage: "task id or index", Required: true, Destination: &o.Task},
			taskFormatFlag(&o.Format),
			executorFlag(&o.Driver),
			envParamFlag(&o.Params),
			&cli.BoolFlag{Name: "json", Usage: "print each step's result as JSON", Destination: &o.JSON},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() < 2 {
				return withCode(exitUsage, fmt.Errorf("intercode step: want a task file and at least one action"))
			}
			return runStep(c.Context, o, c.Args().First(), c.Args().Tail(), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// findTask picks a task by id, else by index.
func findTask(tasks []env.Task, sel string) (env.Task, bool) {
	for _, t := range tasks {
		if t.ID == sel {
			return t, true
		}
	}
	if i, err := strconv.Atoi(sel); err == nil {
		for _, t := range tasks {
			if t.Index == i {
				return t, true
			}
		}
	}
	return env.Task{}, false
}

func runStep(ctx context.Context, o stepOptions, path string, actions []string, w, warn io.Writer) error {
	const cmd = "intercode step"
	tasks, err := loadEnvTasks(cmd, path, o.Format)
	if err != nil {
		return err
	}
	t, ok := findTask(tasks, o.Task)
	if !ok {
		return withCode(exitUsage, fmt.Errorf("%s: no task %q in %s", cmd, o.Task, path))
	}
	params, err := envParams(cmd, o.Params.Value())
	if err != nil {
		return err
	}
	ex, err := openCheckExecutor(ctx, cmd, t.Env, o.Driver, 2, warn)
	if err != nil {
		return err
	}
	defer ex.Close()
	e, err := env.Open(ctx, t.Env, ex, env.Options{Params: params})
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := e.Reset(ctx, t); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	if !o.JSON {
		fmt.Fprintf(w, "task %s: %s\n", t.ID, t.Query)
	}
	for _, a := range actions {
		r, err := e.Step(ctx, a)
		if err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		if !r.Done {
			arg := ""
			if t.Env == "python" {
				arg = t.Setup[env.SetupEntryPoint]
			}
			if t.Env != "ctf" {
				sc, err := e.Score(ctx, arg)
				if err != nil {
					return fmt.Errorf("%s: %w", cmd, err)
				}
				r.Reward = sc.Reward
			}
		}
		if o.JSON {
			if err := enc.Encode(map[string]any{"action": a, "observation": r.Observation, "reward": r.Reward,
				"valid": r.Valid, "done": r.Done}); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(w, "$ %s\n%s", a, r.Observation)
		if r.Observation != "" && !strings.HasSuffix(r.Observation, "\n") {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "reward %.2f, valid %v%s\n", r.Reward, r.Valid, map[bool]string{true: ", done"}[r.Done])
		if r.Done {
			break
		}
	}
	return nil
}
