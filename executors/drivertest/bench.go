package drivertest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// BenchProgram is a program every execution path runs in benchmarks, so
// drivers' figures compare.
type BenchProgram struct {
	Name string
	Code string
}

// TrivialCode and MBPPCode are the bench programs: a trivial print and an
// MBPP-sized solution with its tests (cmd/perfbench runs them too).
const (
	TrivialCode = "print(1 + 1)\n"
	MBPPCode    = `import re
def text_match_wordz(text):
    patterns = '\w*z.\w*'
    if re.search(patterns, text):
        return 'Found a match!'
    else:
        return 'Not matched!'

def similar_elements(test_tup1, test_tup2):
    res = tuple(set(test_tup1) & set(test_tup2))
    return tuple(sorted(res))

assert text_match_wordz("pythonz.") == 'Found a match!'
assert text_match_wordz("xyz.") == 'Found a match!'
assert text_match_wordz("  lang  .") == 'Not matched!'
assert similar_elements((3, 4, 5, 6), (5, 7, 4, 10)) == (4, 5)
assert similar_elements((1, 2, 3, 4), (5, 4, 3, 7)) == (3, 4)
print("ok")
`
)

// BenchPrograms: the bench programs by name.
var BenchPrograms = []BenchProgram{{Name: "trivial", Code: TrivialCode}, {Name: "mbpp", Code: MBPPCode}}

// BenchRuns runs code b.N times through ex with the given concurrency and
// reports runs/s. Every run must succeed.
func BenchRuns(b *testing.B, ex executors.Executor, code string, concurrency int) float64 {
	ctx := context.Background()
	// Warm the pool outside the timer.
	if _, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: code}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	err := RunMany(ctx, ex, code, b.N, concurrency)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "runs/s")
	return rate
}

// RunMany runs code n times through ex, concurrency at a time, and returns
// the first error or failed run.
func RunMany(ctx context.Context, ex executors.Executor, code string, n, concurrency int) error {
	return Parallel(n, concurrency, func() error {
		r, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: code})
		if err == nil && !r.OK() {
			err = fmt.Errorf("run failed: exit %d stderr %q", r.ExitCode, clip(r.Stderr))
		}
		return err
	})
}

// Parallel calls f n times on concurrency goroutines and returns the first
// error; every call is made whatever the errors.
func Parallel(n, concurrency int, f func() error) error {
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				if err := f(); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for range n {
		jobs <- struct{}{}
	}
	close(jobs)
	wg.Wait()
	return first
}

// BashBenchCells are bash session cells for benchmarks: a trivial echo, and
// a cell that changes the shell state every time (a counter, a function,
// the working directory) as an agent's commands do.
var BashBenchCells = []BenchProgram{
	{Name: "echo", Code: "echo hi\n"},
	{Name: "state", Code: "n=$((n + 1)); last=\"cell $n\"; show() { echo \"$last\"; }; mkdir -p d; cd d; cd ..; show\n"},
}

// BenchCells runs code b.N times as cells of one Python session and
// reports cells/s.
func BenchCells(b *testing.B, ex executors.Executor, code string) float64 {
	return BenchSessionCells(b, ex, executors.Python, code)
}

// BenchSessionCells runs code b.N times as cells of one session of lang
// and reports cells/s.
func BenchSessionCells(b *testing.B, ex executors.Executor, lang executors.Language, code string) float64 {
	ctx := context.Background()
	s, err := ex.Open(ctx, lang, executors.SessionOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		r, err := s.Exec(ctx, code)
		if err != nil {
			b.Fatal(err)
		}
		if !r.OK() {
			b.Fatalf("cell failed: %q", r.Stderr)
		}
	}
	b.StopTimer()
	rate := float64(b.N) / time.Since(start).Seconds()
	b.ReportMetric(rate, "cells/s")
	return rate
}

// Rates collects runs/s per path for a ratio table.
type Rates struct {
	mu sync.Mutex
	m  map[string]float64
}

// Set records a rate.
func (r *Rates) Set(path string, rate float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]float64{}
	}
	r.m[path] = rate
}

// Table renders every rate ("program/path") and its ratio to the same
// program's baseline path.
func (r *Rates) Table(baseline string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var keys []string
	for k := range r.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		prog, _, _ := strings.Cut(k, "/")
		base := r.m[prog+"/"+baseline]
		ratio := 0.0
		if base > 0 {
			ratio = r.m[k] / base
		}
		fmt.Fprintf(&b, "%-32s %10.1f /s  %7.2fx %s\n", k, r.m[k], ratio, baseline)
	}
	return b.String()
}
