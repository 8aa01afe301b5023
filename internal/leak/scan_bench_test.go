package leak

import (
	"context"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/codefeedback/codefeedback/schema"
)

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
// precise to the nanosecond where getrusage counts scheduler ticks.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

// BenchmarkScanVsReference times each scanner of a check against the
// rune-at-a-time reference the differential tests hold it to (ref*), over the synthetic dialogues, ten at a time, the two
// alternating on one locked thread, and reports the median over the chunks
// of new/reference thread CPU time: chunks the machine's other load slowed
// fall on both sides. "fused" is the one scan giving code and word tokens
// against the two scans it replaced (codeTokens and appendTokens).
// Run: go test -run '^$' -bench ScanVsReference -benchtime 3x ./stages/audit/
func BenchmarkScanVsReference(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	corpus, _ := syntheticCorpus(b, 1000)
	var ds []*schema.Dialogue
	for d := range corpus {
		ds = append(ds, d)
	}
	var toks []span
	var ctoks []ctok
	var nb []byte
	eachLine := func(d *schema.Dialogue, fn func(l string)) {
		for _, m := range d.Messages {
			for rest := m.Content; rest != ""; {
				var l string
				l, rest, _ = strings.Cut(rest, "\n")
				fn(l)
			}
		}
	}
	pairs := []struct {
		name     string
		new, ref func(d *schema.Dialogue)
	}{
		{"words", func(d *schema.Dialogue) {
			for _, m := range d.Messages {
				toks = appendTokens(toks[:0], m.Content)
			}
		}, func(d *schema.Dialogue) {
			for _, m := range d.Messages {
				toks = refAppendTokens(toks[:0], m.Content)
			}
		}},
		{"fused", func(d *schema.Dialogue) {
			for _, m := range d.Messages {
				ctoks, toks = codeAndWordTokens(m.Content, ctoks[:0], toks[:0], nil)
			}
		}, func(d *schema.Dialogue) {
			for _, m := range d.Messages {
				ctoks, toks = codeTokens(m.Content, ctoks[:0]), appendTokens(toks[:0], m.Content)
			}
		}},
		{"lines", func(d *schema.Dialogue) {
			eachLine(d, func(l string) {
				nb = normalizeAppend(nb[:0], l)
				DefaultLineOptions.Keep(unsafe.String(unsafe.SliceData(nb), len(nb)))
				codeLike(l)
			})
		}, func(d *schema.Dialogue) {
			eachLine(d, func(l string) {
				nb = refNormalizeAppend(nb[:0], l)
				refKeep(DefaultLineOptions, unsafe.String(unsafe.SliceData(nb), len(nb)))
				refCodeLike(l)
			})
		}},
	}
	const chunk = 10
	for range b.N {
		for _, p := range pairs {
			var ratios []float64
			for c := 0; c < len(ds)/chunk; c++ {
				run := func(fn func(d *schema.Dialogue)) time.Duration {
					t0 := threadCPU()
					for _, d := range ds[c*chunk : (c+1)*chunk] {
						fn(d)
					}
					return threadCPU() - t0
				}
				var tn, tr time.Duration
				if c%2 == 0 {
					tn, tr = run(p.new), run(p.ref)
				} else {
					tr, tn = run(p.ref), run(p.new)
				}
				ratios = append(ratios, float64(tn)/float64(tr))
			}
			slices.Sort(ratios)
			b.ReportMetric(ratios[len(ratios)/2], p.name+"_new/ref")
		}
	}
}

// BenchmarkCheckLeastCPU reports a check's CPU time per dialogue, with
// every measure, without fingerprints, without statements and without
// both (the differences are what each costs, its tokens included), as the sum over 20-dialogue chunks of the least
// thread CPU time of each chunk over repeated passes: on a shared machine
// the least is the run the other load disturbed least, steadier than a
// mean. To compare two versions, run it alternately in both (the file
// copied into the other tree).
// Run: go test -run '^$' -bench CheckLeastCPU -benchtime 1x ./stages/audit/
func BenchmarkCheckLeastCPU(b *testing.B) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	full := testAuditor(b, Options{})
	nofp := testAuditor(b, Options{Fingerprints: FingerprintOptions{Off: true}})
	nost := testAuditor(b, Options{Statements: StatementOptions{Off: true}})
	neither := testAuditor(b, Options{Fingerprints: FingerprintOptions{Off: true}, Statements: StatementOptions{Off: true}})
	corpus, _ := syntheticCorpus(b, 1000)
	var ds []*schema.Dialogue
	for d := range corpus {
		ds = append(ds, d)
	}
	s := newScratch()
	const chunk, reps = 20, 6
	for range b.N {
		for _, c := range []struct {
			name string
			a    *Auditor
		}{{"check", full}, {"check_no_fingerprints", nofp}, {"check_no_statements", nost}, {"check_neither", neither}} {
			least := make([]time.Duration, len(ds)/chunk)
			for r := range reps {
				for k := range least {
					t0 := threadCPU()
					for i := k * chunk; i < (k+1)*chunk; i++ {
						c.a.check(context.Background(), ds[i], i, s)
					}
					if d := threadCPU() - t0; r == 0 || d < least[k] {
						least[k] = d
					}
				}
			}
			var sum time.Duration
			for _, d := range least {
				sum += d
			}
			b.ReportMetric(float64(sum.Nanoseconds())/float64(len(ds)), "cpu-ns/"+c.name)
		}
	}
}
