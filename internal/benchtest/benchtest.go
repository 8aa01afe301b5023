// Package benchtest holds what several packages' benchmarks measure and
// generate alike: the process's CPU time and peak memory, synthetic
// near-duplicate query texts, and large input files written through one
// buffer.
//
// It is test-only: it imports testing, and only _test.go files import it.
package benchtest

import (
	"bufio"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CPU is the process's user+system CPU time so far: on a shared machine
// it is steadier than the wall clock.
func CPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUSeconds is CPU in seconds, the unit benchmarks report.
func CPUSeconds(tb testing.TB) float64 {
	tb.Helper()
	return CPU(tb).Seconds()
}

// PeakRSSMiB is the process's peak resident set so far, in MiB (0 where
// the kernel does not say).
func PeakRSSMiB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

var (
	prefixes = []string{"", "Please ", "Can you ", "I need to ", "Help me ", "Quickly "}
	suffixes = []string{"", " in Python", " efficiently", " with comments", " and explain it", " using a function", " step by step"}
)

// Perturbed returns n texts made from base, the same for the same seed:
// copy 0 is base itself, later copies drop, double and swap words, change
// numbers and add a prefix and suffix. It stands in for a large query pool
// full of near-duplicates.
func Perturbed(base []string, n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 11))
	out := make([]string, 0, n)
	for c := 0; len(out) < n; c++ {
		for _, t := range base {
			if len(out) == n {
				break
			}
			if c == 0 {
				out = append(out, t)
				continue
			}
			var w []string
			for _, x := range strings.Fields(t) {
				switch r := rng.Float64(); {
				case r < 0.08: // drop
				case r < 0.12:
					if _, err := strconv.Atoi(x); err == nil {
						x = strconv.Itoa(rng.IntN(1000))
					}
					w = append(w, x, x)
				default:
					w = append(w, x)
				}
			}
			if len(w) > 2 {
				i := rng.IntN(len(w) - 1)
				w[i], w[i+1] = w[i+1], w[i]
			}
			out = append(out, prefixes[rng.IntN(len(prefixes))]+strings.Join(w, " ")+suffixes[rng.IntN(len(suffixes))])
		}
	}
	return out
}

// WriteFile creates path, lets write fill it through a 1 MiB buffer and
// returns the file's size, failing the benchmark on any error.
func WriteFile(tb testing.TB, path string, write func(w io.Writer)) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	write(w)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}
