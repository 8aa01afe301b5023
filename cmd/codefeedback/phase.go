package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/codefeedback/codefeedback/pipeline"
	"github.com/urfave/cli/v2"
)

// A phased run (pipeline/phase.go) on a scheduler: `plan` prints the phases
// (or a Slurm submission script made from them), `run --phase K` runs one
// task of phase K, `merge --phase K` combines phase K's tasks.

func init() {
	register(&cli.Command{
		Name:      "plan",
		Usage:     "print how a pipeline splits into phases for parallel tasks (or a Slurm script that submits them)",
		ArgsUsage: "PIPELINE.yaml",
		Description: "A phased run cuts the pipeline at its whole-set stages (pack, dedup, audit, leetcode). Phase K's\n" +
			"tasks run its per-item stages, each on 1/N of the items in its own run directory\n" +
			"(`run --phase K --shard i/N --run-root ROOT`); then `merge --phase K` combines them, runs the\n" +
			"whole-set stages after them and hands their output to phase K+1's tasks. The last merge publishes the\n" +
			"outputs, byte-identical to an unsharded run. --slurm prints a bash script that submits one job array\n" +
			"per phase and one merge job after it, each depending on the step before; --kubernetes prints an\n" +
			"Indexed Job per phase and a merge Job after it, for pipeline/deploy/k8s/run-phases.sh.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "shards", Value: 1, Usage: "tasks per phase"},
			&cli.StringFlag{Name: "run-root", Usage: "directory of the phased run's run directories (for --slurm)"},
			&cli.IntFlag{Name: "limit", Usage: "use only the first N input items (passed to every task and merge)"},
			&cli.BoolFlag{Name: "slurm", Usage: "print a Slurm submission script for the plan"},
			&cli.StringFlag{Name: "bin", Value: "codefeedback", Usage: "with --slurm: the codefeedback program the jobs run"},
			&cli.BoolFlag{Name: "kubernetes", Usage: "print the plan as Kubernetes Jobs (an Indexed Job per phase, a merge Job after it) for pipeline/deploy/k8s/run-phases.sh"},
			&cli.StringFlag{Name: "image", Value: "codefeedback:latest", Usage: "with --kubernetes: the IMAGE (built by make image)"},
			&cli.BoolFlag{Name: "json", Usage: "print the phases as JSON"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return withCode(exitUsage, errors.New("plan: want one pipeline file"))
			}
			if c.Int("shards") < 1 {
				return withCode(exitUsage, fmt.Errorf("plan: --shards %d: want at least 1", c.Int("shards")))
			}
			file := c.Args().First()
			if err := checkPipelineFile("plan", file); err != nil {
				return err
			}
			cfg, err := pipeline.Load(file, "")
			if err != nil {
				return withCode(readCode(err), err)
			}
			phases := pipeline.Plan(cfg)
			switch {
			case c.Bool("slurm"):
				if c.String("run-root") == "" {
					return withCode(exitUsage, errors.New("plan --slurm: want --run-root (a directory every node sees)"))
				}
				return writeSlurmScript(c.App.Writer, slurmPlan{File: file, Root: c.String("run-root"), Bin: c.String("bin"),
					Shards: c.Int("shards"), Limit: c.Int("limit"), Phases: phases})
			case c.Bool("kubernetes"):
				return writeK8sJobs(c.App.Writer, k8sPlan{File: file, Image: c.String("image"), Shards: c.Int("shards"),
					Limit: c.Int("limit"), Phases: phases})
			case c.Bool("json"):
				return writeJSON(c.App.Writer, phases)
			}
			printPlan(c.App.Writer, phases, c.Int("shards"))
			return nil
		},
	})
}

func printPlan(w io.Writer, phases []pipeline.Phase, shards int) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttasks\tper-item stages (in the tasks)\twhole-set stages (in the merge)\treads")
	for _, p := range phases {
		tasks := shards
		if len(p.Each) == 0 {
			tasks = 0
		}
		reads := "inputs"
		if p.Index > 0 {
			reads = "merge " + strconv.Itoa(p.Index-1) + ": " + orDash(p.Seeds)
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\n", p.Index, tasks, orDash(p.Each), orDash(p.All), reads)
	}
	tw.Flush()
}

func orDash(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ", ")
}

type slurmPlan struct {
	File, Root, Bin string
	Shards, Limit   int
	Phases          []pipeline.Phase
}

// writeSlurmScript prints a bash script that submits the plan: per phase one
// job array (a task per shard) and one merge job after it, each depending on
// the step before (afterok), so a failed step stops the chain. It is made
// from the plan each time, so it cannot drift from the pipeline file. A
// resubmitted script's completed tasks exit at once (`run --phase` skips a
// task that completed with the same inputs); the others resume from their
// stores.
func writeSlurmScript(w io.Writer, p slurmPlan) error {
	var b strings.Builder
	f := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	f("#!/bin/bash\n")
	f("# Submits a phased codefeedback run to Slurm: per phase, one job array of %d tasks\n", p.Shards)
	f("# and one merge job, each step after the one before (--dependency=afterok).\n")
	f("# Made by: codefeedback plan %s --shards %d --run-root %s --slurm", p.File, p.Shards, p.Root)
	if p.Limit > 0 {
		f(" --limit %d", p.Limit)
	}
	f("\n# Make it again after changing the pipeline's stages. Plan %s:\n", pipeline.PlanHash(p.Phases))
	for _, ph := range p.Phases {
		f("#   phase %d: tasks run %s; merge runs %s\n", ph.Index, orDash(ph.Each), orDash(ph.All))
	}
	f("# Extra sbatch options for every job (partition, account, time, cpus):\n")
	f("#   SBATCH_OPTS='--partition=cpu --time=24:00:00' bash THIS_SCRIPT\n")
	f("# It prints the last merge's job id; its log is RUN_ROOT/logs/merge-LAST-JOBID.log.\n")
	f("set -euo pipefail\n")
	f("bin=%s\npipeline=%s\nroot=%s\n", shq(p.Bin), shq(p.File), shq(p.Root))
	f("read -r -a opts <<< \"${SBATCH_OPTS:-}\"\n")
	f("mkdir -p \"$root/logs\"\n")
	extra := ""
	if p.Limit > 0 {
		extra = " --limit " + strconv.Itoa(p.Limit)
	}
	f("dep=()\n")
	f(`# step NAME LOG [SBATCH_ARGS...] -- COMMAND...: submits COMMAND as one job
# (its log $root/logs/LOG) after the step before; its id, in $job, is what
# the next step waits for.
step() {
  local name=$1 log=$2 args=()
  shift 2
  while [ "$1" != -- ]; do args+=("$1"); shift; done
  shift
  job=$(sbatch --parsable --job-name="$name" "${args[@]}" "${dep[@]}" "${opts[@]}" \
    --output="$root/logs/$log" --wrap="$(printf '%%q ' "$@")")
  dep=(--dependency=afterok:${job%%%%;*})
}
`)
	for _, ph := range p.Phases {
		k := strconv.Itoa(ph.Index)
		if len(ph.Each) > 0 {
			f("# phase %s: %s, %d tasks\n", k, orDash(ph.Each), p.Shards)
			f("step codefeedback-p%s 'phase-%s-%%a-%%A.log' --array=0-%d --requeue -- \\\n", k, k, p.Shards-1)
			f("  \"$bin\" run \"$pipeline\" --phase %s --shards %d --run-root \"$root\"%s\n", k, p.Shards, extra)
		}
		f("# merge %s: %s\n", k, orDash(ph.All))
		f("step codefeedback-m%s 'merge-%s-%%j.log' -- \\\n", k, k)
		f("  \"$bin\" merge \"$pipeline\" --phase %s --shards %d --run-root \"$root\"%s\n", k, p.Shards, extra)
	}
	f("echo \"${job%%%%;*}\"\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// shq quotes s for bash.
func shq(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-=:,+@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runPhaseTask is `run --phase K`: one task of a phased run.
func runPhaseTask(ctx context.Context, o runOptions, k int, root string) error {
	if root == "" {
		return withCode(exitUsage, errors.New("run --phase: want --run-root (the phased run's directory every task sees)"))
	}
	if o.runDir != "" || len(o.opts.Only) > 0 || o.opts.From != "" {
		return withCode(exitUsage, errors.New("run --phase: --run-dir, --only and --from are the phase's: leave them out"))
	}
	sh, err := shardOf(o)
	if err != nil {
		return err
	}
	if sh.Count == 0 {
		return withCode(exitUsage, errors.New("run --phase: want --shard i/N (or --shards N with SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)"))
	}
	cfg, err := loadForPhase("run", o)
	if err != nil {
		return err
	}
	res, err := pipeline.RunPhaseTask(ctx, cfg, root, k, sh, o.opts)
	if res.Skipped {
		fmt.Fprintf(o.stdout, "phase %d task %d/%d: already complete in %s with the same inputs: skipped\n", k, sh.Index, sh.Count, res.Dir)
		return nil
	}
	if res.Manifest != nil {
		printSummary(o.stdout, res.Manifest)
		fmt.Fprintf(o.stdout, "phase %d task %d/%d: %s in %s\n", k, sh.Index, sh.Count, res.Manifest.Status, res.Dir)
	}
	return runExit(err)
}

// mergePhase is `merge --phase K`.
func mergePhase(ctx context.Context, o runOptions, k int, root string) error {
	if root == "" {
		return withCode(exitUsage, errors.New("merge --phase: want --run-root"))
	}
	cfg, err := loadForPhase("merge", o)
	if err != nil {
		return err
	}
	res, err := pipeline.MergePhase(ctx, cfg, root, k, o.shards, o.opts)
	if errors.Is(err, pipeline.ErrBadShards) {
		return withCode(exitUsage, fmt.Errorf("merge: phase %d: %w", k, err))
	}
	if res.Manifest != nil {
		printSummary(o.stdout, res.Manifest)
		if len(res.Manifest.Outputs) > 0 {
			// The last merge published: the report and the dataset card,
			// as after an unsharded run.
			reportAfterRun(ctx, o.stdout, o.stderr, res.Manifest)
		}
		fmt.Fprintf(o.stdout, "merge %d: %d tasks, %d stored results merged into %s: %s\n", k, res.Tasks, res.Merged.Entries, res.Dir, res.Manifest.Status)
	}
	return runExit(err)
}

func loadForPhase(cmd string, o runOptions) (*pipeline.Config, error) {
	if err := checkPipelineFile(cmd, o.file); err != nil {
		return nil, err
	}
	cfg, err := pipeline.Load(o.file, "")
	if err != nil {
		return nil, withCode(readCode(err), err)
	}
	return cfg, nil
}
