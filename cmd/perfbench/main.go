// Command perfbench is `make bench`: a small set of representative
// measurements, each against a baseline measured in the same process right
// next to it, printed as one table of wall-clock and CPU-second ratios with
// the load average. CPU seconds depend much less on a shared machine's load
// than wall time, so the CPU ratio is the figure to compare across runs.
//
//	go run ./cmd/perfbench -bin bin/codefeedback [-scale 1] [-only rerun,pool]
//
// Every figure is a cost ratio, ours over the baseline's for the same work:
// below 1 is cheaper than the baseline. The target column gives the issue's
// bound in the same terms (a speed of at least 0.6x is a cost of at most
// 1.67x).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// row is one line of the table.
type row struct {
	name, ours, base string
	// Cost of the same work: wall and CPU seconds, ours and the baseline's.
	// base zero: a figure without a baseline (printed in the note).
	wall, baseWall, cpu, baseCPU float64
	maxCost                      float64 // target bound on the CPU ratio (0: none)
	note                         string
}

type bench struct {
	name string
	run  func(ctx context.Context, e *env) ([]row, error)
}

// env is what every measurement gets.
type env struct {
	bin   string  // the codefeedback binary
	dir   string  // scratch directory
	scale float64 // multiplies every size
	root  string  // repository root (testdata, .ci)
	// cellsData holds codefeedback-sample/code_feedback_sample.jsonl
	// for the session-cells row on real cells; "" skips that row.
	cellsData string
	log       func(format string, args ...any)
}

func (e *env) n(base int) int { return max(1, int(float64(base)*e.scale)) }

var benches = []bench{
	{"rerun", benchRerun},
	{"pool", benchPool},
	{"exec", benchExecCLI},
	{"cells", benchCells},
	{"docker", benchDocker},
	{"parquet", benchParquet},
}

func main() {
	bin := flag.String("bin", "bin/codefeedback", "codefeedback binary to measure")
	scale := flag.Float64("scale", 1, "multiply every benchmark's size (0.1 for a smoke run)")
	only := flag.String("only", "", "comma-separated benchmarks to run: "+names())
	keep := flag.Bool("keep", false, "keep the scratch directory")
	cellsData := flag.String("cells-data", "", "directory holding codefeedback-sample/code_feedback_sample.jsonl, for session cells on real Code-Feedback cells (empty: that row is skipped)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	if err == nil {
		_, err = os.Stat(abs)
	}
	if err != nil {
		fatal("perfbench: binary %s: %v (run `make build` first)", *bin, err)
	}
	root, _ := os.Getwd()
	dir, err := os.MkdirTemp("", "codefeedback-bench-")
	if err != nil {
		fatal("perfbench: %v", err)
	}
	if !*keep {
		defer os.RemoveAll(dir)
	}
	e := &env{bin: abs, dir: dir, scale: *scale, root: root, cellsData: *cellsData, log: func(f string, a ...any) {
		fmt.Fprintf(os.Stderr, "bench: "+f+"\n", a...)
	}}
	want := map[string]bool{}
	for _, s := range strings.Split(*only, ",") {
		if s = strings.TrimSpace(s); s != "" {
			want[s] = true
		}
	}
	ctx := context.Background()
	start := time.Now()
	load0 := loadavg()
	var rows []row
	var failed []string
	for _, b := range benches {
		if len(want) > 0 && !want[b.name] {
			continue
		}
		t := time.Now()
		e.log("%s: start (load %s)", b.name, loadavg())
		rs, err := b.run(ctx, e)
		if err != nil {
			// One broken path must not hide the others' figures.
			e.log("%s: FAILED: %v", b.name, err)
			failed = append(failed, b.name+": "+err.Error())
		}
		rows = append(rows, rs...)
		e.log("%s: %.1f s", b.name, time.Since(t).Seconds())
	}
	printTable(os.Stdout, rows, load0, loadavg(), time.Since(start))
	for _, f := range failed {
		fmt.Println("FAILED", f)
	}
	if len(failed) > 0 {
		os.Exit(1)
	}
}

func names() string {
	var n []string
	for _, b := range benches {
		n = append(n, b.name)
	}
	return strings.Join(n, ",")
}

func fatal(f string, a ...any) {
	fmt.Fprintf(os.Stderr, f+"\n", a...)
	os.Exit(2)
}

// loadavg is /proc/loadavg's three averages.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
