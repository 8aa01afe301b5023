package bwrap_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/bwrap"
	"github.com/codefeedback/codefeedback/executors/drivertest"
)

// BenchmarkPaths runs the shared bench programs through every path in one
// run and logs runs/s with the ratio to a bare python3 -c:
//
//	go test -run '^$' -bench Paths -benchtime 200x ./executors/bwrap
func BenchmarkPaths(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	l, err := bwrap.NewLauncher(bwrap.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var rates drivertest.Rates
	for _, p := range drivertest.BenchPrograms {
		b.Run(p.Name+"/python3-c", func(b *testing.B) {
			rates.Set(p.Name+"/python3-c", benchProcess(b, []string{"/usr/bin/python3", "-c", p.Code}))
		})
		b.Run(p.Name+"/bwrap-fresh", func(b *testing.B) {
			rates.Set(p.Name+"/bwrap-fresh", benchBwrap(b, l, []string{"/usr/bin/python3", "-c", p.Code}))
		})
		var pool float64
		b.Run(p.Name+"/pool", func(b *testing.B) {
			ex := executors.NewPool(l, executors.PoolOptions{Size: 2})
			defer ex.Close()
			pool = drivertest.BenchRuns(b, ex, p.Code, 2)
			rates.Set(p.Name+"/pool", pool)
		})
		b.Run(p.Name+"/session", func(b *testing.B) {
			ex := executors.NewPool(l, executors.PoolOptions{Size: 1})
			defer ex.Close()
			rate := drivertest.BenchCells(b, ex, p.Code)
			rates.Set(p.Name+"/session-cells", rate)
			if pool > 0 {
				b.ReportMetric(rate/pool, "x-pool-runs") // a cell vs a one-shot run of the same code
			}
		})
	}
	b.Logf("\n%s", rates.Table("python3-c"))
}

// BenchmarkBashSession measures cells/s of a bash session, whose every
// cell restores the shell state the last one saved and saves it again:
//
//	go test -run '^$' -bench BashSession -benchtime 500x ./executors/bwrap
func BenchmarkBashSession(b *testing.B) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	l, err := bwrap.NewLauncher(bwrap.Config{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range drivertest.BashBenchCells {
		b.Run(c.Name, func(b *testing.B) {
			ex := executors.NewPool(l, executors.PoolOptions{Size: 1})
			defer ex.Close()
			drivertest.BenchSessionCells(b, ex, executors.Bash, c.Code)
		})
	}
}

// benchBwrap starts a fresh sandbox running argv b.N times, one after another.
func benchBwrap(b *testing.B, l *bwrap.Launcher, argv []string) float64 {
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cmd, err := l.Command(argv)
		if err != nil {
			b.Fatal(err)
		}
		out, err := cmd.CombinedOutput()
		for _, f := range cmd.ExtraFiles {
			f.Close()
		}
		if err != nil {
			b.Fatalf("bwrap %v: %v %s", argv[:2], err, out)
		}
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "runs/s")
	return rate
}

// benchProcess starts argv b.N times, one after another.
func benchProcess(b *testing.B, argv []string) float64 {
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v %s", argv[:2], err, out)
		}
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "runs/s")
	return rate
}
