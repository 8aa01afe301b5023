package executors

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// preflightCode is a trivial program that does what every judged run
// does: imports modules (opens files), duplicates a descriptor, starts a
// second process and prints.
const preflightCode = `import os, subprocess
os.close(os.dup(1))
print(subprocess.run(["sh", "-c", "echo ok"], capture_output=True, text=True).stdout.strip())
`

// preflightWait bounds the pre-flight run: the first instance may still be
// starting, and a loaded machine is slow to start one.
const preflightWait = 2 * time.Minute

// Preflight runs a trivial program under ex's default limits and returns
// an error naming the likely cause when it does not print: a sandbox that
// cannot run anything (bwrap://?pids=1&nofile=3) must fail at open, not
// make every item of a run "fail its tests".
func Preflight(ctx context.Context, ex Executor) error {
	ctx, cancel := context.WithTimeout(ctx, preflightWait)
	defer cancel()
	lim := ex.Info().Limits
	res, err := ex.Run(ctx, Request{Language: Python, Code: preflightCode})
	if err != nil {
		return fmt.Errorf("executors: %s pre-flight: a trivial program could not run (%s): %w; %s",
			ex.Info().Driver, limitsText(lim), err, preflightCause(Result{Stderr: err.Error()}, lim))
	}
	if res.OK() && res.Stdout == "ok\n" {
		return nil
	}
	what := fmt.Sprintf("exit %d", res.ExitCode)
	switch {
	case res.TimedOut:
		what = "timed out"
	case res.Signal != "":
		what = "killed by " + res.Signal
	}
	detail := res.ErrorLine
	if detail == "" {
		detail = lastLine(res.Stderr)
	}
	return fmt.Errorf("executors: %s pre-flight: a trivial program (print, a second process, a duplicated descriptor) failed under this executor's limits (%s): %s%s; %s",
		ex.Info().Driver, limitsText(lim), what, prefix(": ", detail), preflightCause(res, lim))
}

// preflightCause names the limit a failed pre-flight most likely hit.
func preflightCause(res Result, lim Limits) string {
	out := res.Stderr + res.Stdout
	switch {
	case strings.Contains(out, "Errno 24") || strings.Contains(out, "Too many open files"):
		return fmt.Sprintf("the open-files limit (nofile=%d) is too low", lim.OpenFiles)
	case strings.Contains(out, "Errno 11") || strings.Contains(out, "Resource temporarily unavailable") ||
		strings.Contains(out, "can't start new thread"):
		return fmt.Sprintf("the process limit (pids=%d) is too low", lim.Processes)
	case res.OOM || strings.Contains(out, "MemoryError"):
		return fmt.Sprintf("the memory limit (memory=%d bytes) is too low", lim.MemoryBytes)
	case res.TimedOut:
		return fmt.Sprintf("the time limit (timeout=%v) is too short, or the machine is overloaded", lim.Timeout)
	case res.Signal == "SIGXCPU":
		return fmt.Sprintf("the CPU limit (cpu=%v) is too low", lim.CPUTime)
	case strings.Contains(out, "File too large") || res.Signal == "SIGXFSZ":
		return fmt.Sprintf("the file-size limit (file=%d bytes) is too low", lim.FileBytes)
	}
	return "check the executor URL's limits and that the sandbox has python3 and sh"
}

func limitsText(l Limits) string {
	return fmt.Sprintf("memory=%d timeout=%v cpu=%v pids=%d nofile=%d file=%d output=%d",
		l.MemoryBytes, l.Timeout, l.CPUTime, l.Processes, l.OpenFiles, l.FileBytes, l.OutputBytes)
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

func prefix(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}
