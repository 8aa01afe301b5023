package leak

import (
	"context"
	"fmt"
	"iter"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

// syntheticCorpus streams n dialogues of realistic length built from the 10
// Code-Feedback sample dialogues (about 6.6 KB and 7 turns each) with a Code
// Alpaca exchange in front, perturbed per dialogue (renamed identifiers, a
// numbered request) so no two dialogues are identical. Dialogues are built
// on demand, as a reader would stream them, so memory stays that of the
// audit.
func syntheticCorpus(tb testing.TB, n int) (iter.Seq2[*schema.Dialogue, error], int64) {
	return syntheticCorpusOf(tb, n, false)
}

// syntheticCorpusOf is syntheticCorpus, with every message made unique
// when unique is set: a numbered line at its end ("(syn-7, turn 3)", as
// uniqueDialogue adds), which adds no code, no statement and no
// informative n-gram, written as the message is built so the corpus
// costs no more to build than the plain one.
func syntheticCorpusOf(tb testing.TB, n int, unique bool) (iter.Seq2[*schema.Dialogue, error], int64) {
	var cf [][]schema.Message
	for _, d := range testDialogues(tb, sharedtest.Path(tb, "codefeedback-sample/code_feedback_sample.jsonl")) {
		cf = append(cf, d.Messages)
	}
	alpaca := testAlpacaDialogues(tb)
	renames := []string{"result", "data", "value", "count", "index", "items", "total", "number"}
	// Each text is split once at every occurrence of each rename word, so
	// a dialogue is built by joining the pieces with the renamed word
	// (what strings.Replacer would give, at a small part of its cost: the
	// benchmark times the audit, not the building of its input).
	type pieces [][]string // per rename word: the text split at it
	split := func(text string) pieces {
		p := make(pieces, len(renames))
		for i, w := range renames {
			p[i] = strings.Split(text, w)
		}
		return p
	}
	cfp := make([][]pieces, len(cf))
	for i, msgs := range cf {
		for _, m := range msgs {
			cfp[i] = append(cfp[i], split(m.Content))
		}
	}
	alp := make([]pieces, len(alpaca))
	for i, d := range alpaca {
		alp[i] = split(d.Messages[1].Content)
	}
	build := func(k int) *schema.Dialogue {
		a := alpaca[k%len(alpaca)].Messages
		base := cf[k%len(cf)]
		ri := k % len(renames)
		to := renames[ri] + "_" + strconv.Itoa(k%997)
		id := "syn-" + strconv.Itoa(k)
		// join is strings.Join(pieces, to), and the unique line built into
		// the same string.
		var b strings.Builder
		join := func(pieces []string, turn int) string {
			if !unique {
				// As strings.Join: a text without the word is not copied.
				return strings.Join(pieces, to)
			}
			suffix := uniqueLine(id, turn)
			size := len(to)*(len(pieces)-1) + len(suffix)
			for _, p := range pieces {
				size += len(p)
			}
			b.Reset()
			b.Grow(size)
			for i, p := range pieces {
				if i > 0 {
					b.WriteString(to)
				}
				b.WriteString(p)
			}
			b.WriteString(suffix)
			return b.String()
		}
		msgs := make([]schema.Message, 0, len(base)+2)
		req := fmt.Sprintf("Request %d: %s", k, a[0].Content)
		if unique {
			req += uniqueLine(id, 0)
		}
		msgs = append(msgs, schema.Message{Role: schema.RoleUser, Content: req},
			schema.Message{Role: schema.RoleAssistant, Content: join(alp[k%len(alpaca)][ri], 1)})
		for j, m := range base {
			msgs = append(msgs, schema.Message{Role: m.Role, Content: join(cfp[k%len(cf)][j][ri], j+2)})
		}
		return &schema.Dialogue{ID: id, Messages: msgs}
	}
	var bytes int64
	for k := 0; k < 100; k++ {
		for _, m := range build(k).Messages {
			bytes += int64(len(m.Content))
		}
	}
	return func(yield func(*schema.Dialogue, error) bool) {
		for k := 0; k < n; k++ {
			if !yield(build(k), nil) {
				return
			}
		}
	}, bytes / 100
}

// vmHWM returns the process's peak resident set size in bytes (Linux).
func vmHWM(tb testing.TB) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return kb << 10
		}
	}
	tb.Skip("no VmHWM in /proc/self/status")
	return 0
}

// cpuSeconds is the process's user+system CPU time: on a shared machine
// wall time depends on the other load, CPU time much less.
func cpuSeconds(tb testing.TB) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkAudit68k audits 68,000 synthetic dialogues against HumanEval
// and MBPP, first with the code fingerprints and statements off (the
// measures the audit had before them: lines and n-grams) as the baseline,
// then without the statement and literal measures, then with every
// model-free measure without and with the workers' message memo
// (memo.go; "nomemo" is the audit before it, and most messages of this
// corpus recur: see TestMemoRecurrence), then with the memo on a corpus
// where no message recurs ("unique": syntheticCorpusOf, the memo replays
// nothing), and reports for each the seconds, CPU seconds
// (building the dialogues included; s_corpus_only is that part alone,
// and cpu_s_net the audit's CPU seconds without it),
// dialogues/s and the peak RSS so far, and the ratio of the full audit's
// time to the baseline's, both measured in this run.
// Run: go test -run '^$' -bench Audit68k -benchtime 1x ./internal/leak/
func BenchmarkAudit68k(b *testing.B) {
	const n = 68000
	for range b.N {
		// Building the synthetic dialogues is part of every pass below (a
		// real audit decodes JSON instead); time it alone to subtract.
		// The unique corpus (syntheticCorpusOf) costs a little more to build.
		corpusOnly := func(unique bool) float64 {
			corpus, _ := syntheticCorpusOf(b, n, unique)
			runtime.GC()
			cpu0, start := cpuSeconds(b), time.Now()
			chars := 0
			for d := range corpus {
				for _, m := range d.Messages {
					chars += len(m.Content)
				}
			}
			suffix := map[bool]string{false: "", true: "_unique"}[unique]
			b.ReportMetric(time.Since(start).Seconds(), "s_corpus_only"+suffix)
			cpu := cpuSeconds(b) - cpu0
			b.ReportMetric(cpu, "cpu_s_corpus_only"+suffix)
			return cpu
		}
		corpusCPU := map[bool]float64{false: corpusOnly(false), true: corpusOnly(true)}
		var base, cpuBase, noMemo, cpuNoMemo float64
		for _, c := range []struct {
			name string
			o    Options
		}{
			{"baseline", Options{Fingerprints: FingerprintOptions{Off: true}, Statements: StatementOptions{Off: true}}},
			{"nostatements", Options{Statements: StatementOptions{Off: true}}},
			{"nomemo", Options{unmemoized: true}},
			{"full", Options{}},
			{"unique", Options{}},
		} {
			a := testAuditor(b, c.o)
			corpus, avg := syntheticCorpusOf(b, n, c.name == "unique")
			runtime.GC()
			cpu0 := cpuSeconds(b)
			start := time.Now()
			rep, err := a.Run(context.Background(), corpus, nil)
			if err != nil {
				b.Fatal(err)
			}
			el := time.Since(start).Seconds()
			cpu := cpuSeconds(b) - cpu0
			if rep.Dialogues != n {
				b.Fatalf("audited %d dialogues, want %d", rep.Dialogues, n)
			}
			b.ReportMetric(el, "s_"+c.name)
			b.ReportMetric(cpu, "cpu_s_"+c.name)
			b.ReportMetric(cpu-corpusCPU[c.name == "unique"], "cpu_s_net_"+c.name)
			b.ReportMetric(float64(n)/el, "dlg/s_"+c.name)
			b.ReportMetric(float64(vmHWM(b))/(1<<20), "VmHWM_MiB_after_"+c.name)
			b.Logf("%s: avg dialogue %d bytes; flagged %d", c.name, avg, rep.Flagged)
			switch {
			case base == 0:
				base, cpuBase = el, cpu
			case c.name == "nomemo":
				noMemo, cpuNoMemo = el, cpu
			case c.name == "full":
				b.ReportMetric(el/base, "time_full/baseline")
				b.ReportMetric(cpu/cpuBase, "cpu_full/baseline")
				b.ReportMetric(noMemo/el, "time_nomemo/full")
				b.ReportMetric(cpuNoMemo/cpu, "cpu_nomemo/full")
			}
		}
	}
}

// uniqueDialogue returns d with a numbered line at the end of every
// message (uniqueLine), which makes each message distinct and adds no
// code, no statement and no informative n-gram.
func uniqueDialogue(d *schema.Dialogue) *schema.Dialogue {
	u := &schema.Dialogue{ID: d.ID, Messages: slices.Clone(d.Messages)}
	for j := range u.Messages {
		u.Messages[j].Content += uniqueLine(d.ID, j)
	}
	return u
}

// uniqueLine is the line that makes message turn of dialogue id unique.
func uniqueLine(id string, turn int) string {
	return "\n\n(" + id + ", turn " + strconv.Itoa(turn) + ")"
}

// BenchmarkCheck audits the synthetic dialogues one at a time on one
// goroutine (ns/op is per dialogue, MB/s over message text) and reports the
// ratio to a baseline pass over the same text with strings.Fields, measured
// in the same run, which is less sensitive to other load on the machine.
// Run: go test -run '^$' -bench Check -benchtime 5000x ./internal/leak/
func BenchmarkCheck(b *testing.B) {
	a := testAuditor(b, Options{})
	corpus, _ := syntheticCorpus(b, 1000)
	var ds []*schema.Dialogue
	var size int64
	for d := range corpus {
		ds = append(ds, d)
		for _, m := range d.Messages {
			size += int64(len(m.Content))
		}
	}
	b.SetBytes(size / int64(len(ds)))
	base := time.Now()
	n := 0
	for i := range b.N {
		for _, m := range ds[i%len(ds)].Messages {
			n += len(strings.Fields(m.Content))
		}
	}
	baseline := time.Since(base)
	s := newScratch()
	b.ResetTimer()
	for i := range b.N {
		a.check(context.Background(), ds[i%len(ds)], i, s)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed())/float64(baseline), "x_fields_baseline")
	if n == 0 {
		b.Fatal("baseline saw no words")
	}
}

// BenchmarkPhases times the audit's passes over the same dialogues one at
// a time, to see where a check's time goes: the word tokenizer of the
// n-gram measure, the code tokenizer of the fingerprints, the code-line
// extraction of the line measure, and the whole check with and without
// fingerprints. cpu-ns/op is process CPU time per dialogue, steadier than
// ns/op on a shared machine (a waiting process accrues no CPU time), and
// x_fields its ratio to a reference pass run alternately with it.
// Run: go test -run '^$' -bench Phases -benchtime 2000x -count 5 ./internal/leak/
func BenchmarkPhases(b *testing.B) {
	full, base := testAuditor(b, Options{}), testAuditor(b, Options{Fingerprints: FingerprintOptions{Off: true}})
	corpus, _ := syntheticCorpus(b, 1000)
	var ds []*schema.Dialogue
	for d := range corpus {
		ds = append(ds, d)
	}
	s := newScratch()
	// Each phase alternates with a reference pass (strings.Fields over the
	// same messages) in chunks of 50 dialogues, so both see the same load;
	// x_fields is the phase's CPU time over the reference's.
	var sink int
	reference := func(d *schema.Dialogue) {
		for _, m := range d.Messages {
			sink += len(strings.Fields(m.Content))
		}
	}
	phase := func(name string, fn func(d *schema.Dialogue, i int)) {
		b.Run(name, func(b *testing.B) {
			var cpu, ref float64
			for i := 0; i < b.N; i += 50 {
				end := min(i+50, b.N)
				c0 := cpuSeconds(b)
				for k := i; k < end; k++ {
					reference(ds[k%len(ds)])
				}
				c1 := cpuSeconds(b)
				for k := i; k < end; k++ {
					fn(ds[k%len(ds)], k)
				}
				ref += c1 - c0
				cpu += cpuSeconds(b) - c1
			}
			b.ReportMetric(cpu*1e9/float64(b.N), "cpu-ns/op")
			b.ReportMetric(cpu/ref, "x_fields")
		})
	}
	phase("words", func(d *schema.Dialogue, _ int) {
		for _, m := range d.Messages {
			s.toks = appendTokens(s.toks[:0], m.Content)
		}
	})
	phase("code-tokens", func(d *schema.Dialogue, _ int) {
		for _, m := range d.Messages {
			s.ctoks = codeTokens(m.Content, s.ctoks[:0])
		}
	})
	phase("code-lines", func(d *schema.Dialogue, _ int) { full.opts.Lines.dialogueLines(d, full.opts.Window, s) })
	phase("check-no-fingerprints", func(d *schema.Dialogue, i int) { base.check(context.Background(), d, i, s) })
	phase("check", func(d *schema.Dialogue, i int) { full.check(context.Background(), d, i, s) })
}
