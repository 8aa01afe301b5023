package bwrap_test

import (
	"context"
	"fmt"
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
	l := benchLauncher(b)
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
	l := benchLauncher(b)
	for _, c := range drivertest.BashBenchCells {
		b.Run(c.Name, func(b *testing.B) {
			ex := executors.NewPool(l, executors.PoolOptions{Size: 1})
			defer ex.Close()
			drivertest.BenchSessionCells(b, ex, executors.Bash, c.Code)
		})
	}
}

// benchBwrap starts a fresh sandbox running argv b.N times, one after another.
// benchLauncher is a launcher with the default configuration, closed
// when b ends; it skips b without bubblewrap.
func benchLauncher(b *testing.B) *bwrap.Launcher {
	if _, err := exec.LookPath("bwrap"); err != nil {
		b.Skip("bubblewrap not installed")
	}
	l, err := bwrap.NewLauncher(bwrap.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(l.Close)
	return l
}

func benchBwrap(b *testing.B, l *bwrap.Launcher, argv []string) float64 {
	return benchRate(b, func() error {
		cmd, err := l.Command(argv)
		if err != nil {
			return err
		}
		out, err := cmd.CombinedOutput()
		for _, f := range cmd.ExtraFiles {
			f.Close()
		}
		if err != nil {
			return fmt.Errorf("bwrap %v: %v %s", argv[:2], err, out)
		}
		return nil
	})
}

// benchProcess starts argv b.N times, one after another.
func benchProcess(b *testing.B, argv []string) float64 {
	return benchRate(b, func() error {
		cmd := exec.CommandContext(context.Background(), argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v %s", argv[:2], err, out)
		}
		return nil
	})
}

// benchRate calls run b.N times, one after another, and reports runs/s.
func benchRate(b *testing.B, run func() error) float64 {
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "runs/s")
	return rate
}
