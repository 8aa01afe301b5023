package evaluate_test

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/evaluate"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
)

// evalplusOracle is EvalPlus's own evaluation code (see its header): the
// verdicts the judge must agree with.
//
//go:embed testdata/evalplus_oracle.py
var evalplusOracle string

// envFullSweep runs the differential test over every HumanEval+ and MBPP+
// task instead of the sample (about 90 minutes on 2 heavily loaded cores);
// envTasks over the comma-separated task ids it names.
const (
	envFullSweep = "CODEFEEDBACK_EVALPLUS_FULL"
	envTasks     = "CODEFEEDBACK_EVALPLUS_TASKS"
)

// diffSample are the tasks of the default run, EvalPlus's special cases:
// find_zero's oracle, set equality and tuple decoding (Mbpp/2), Mbpp/120's
// assertion text without `import math`, output-not-None (Mbpp/737) and
// Mbpp/793's `plus_input: {}`.
var diffSample = []string{"HumanEval/32", "Mbpp/2", "Mbpp/120", "Mbpp/737", "Mbpp/793"}

// candidate is one solution to judge, with how it was made.
type candidate struct {
	label string
	code  string
}

// wrongByHand are deliberately wrong solutions built around the canonical
// one, each a way EvalPlus's rules can be got wrong. EvalPlus's verdict is
// not written here: the oracle computes it.
func wrongByHand(program, entry string) []candidate {
	wrap := func(label, body string) candidate {
		return candidate{label, program + "\n\n_cf_orig = " + entry + "\n\n\ndef " + entry + "(*args, **kwargs):\n" + body}
	}
	return []candidate{
		// None where a value is expected (and the right answer where None is).
		wrap("returns None", "    return None\n"),
		// The right value as another type: a string, or a float for an int.
		wrap("wrong type str", "    return str(_cf_orig(*args, **kwargs))\n"),
		wrap("int as float", "    r = _cf_orig(*args, **kwargs)\n    return float(r) if type(r) is int else r\n"),
		// Off by one on ints; off by a little on floats (within atol or not).
		wrap("off by one", "    r = _cf_orig(*args, **kwargs)\n    return r + 1 if type(r) is int else r\n"),
		wrap("float noise 1e-9", "    r = _cf_orig(*args, **kwargs)\n    return r + 1e-9 if type(r) is float else r\n"),
		wrap("float noise 1e-4", "    r = _cf_orig(*args, **kwargs)\n    return r * (1 + 1e-4) if type(r) is float else r\n"),
		// A bool where the reference returns a match object or None.
		wrap("bool of result", "    return _cf_orig(*args, **kwargs) is not None\n"),
		// A list reversed (right as a set, wrong as a list).
		wrap("list reversed", "    r = _cf_orig(*args, **kwargs)\n    return r[::-1] if isinstance(r, list) else r\n"),
	}
}

// timerProof is a solution no timer's signal can stop: it blocks SIGALRM and SIGPROF
// and sleeps. EvalPlus kills the set's process at its deadline, and so must
// the harness (a loop inside C code is the same case, spinning a CPU).
func timerProof(program, entry string) candidate {
	return candidate{"timer-proof", program + "\n\n_cf_orig = " + entry + "\n\n\ndef " + entry + "(*args, **kwargs):\n" +
		"    import signal, time\n    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGPROF})\n    time.sleep(10 ** 6)\n"}
}

type oracleVerdict struct {
	Base string `json:"base"`
	Plus string `json:"plus"`
	// Why a set failed: its first failing input and the exception
	// (TimeoutException is EvalPlus's per-input wall-clock limit).
	BaseWhy string `json:"base_why"`
	PlusWhy string `json:"plus_why"`
}

// runOracle gives EvalPlus's verdicts on codes for the raw record rec.
// perSet is the oracle's EVALPLUS_TIMEOUT_PER_TASK (EvalPlus's default is
// 60 s; a loaded machine needs more for Mbpp/599's canonical solution).
func runOracle(ctx context.Context, ex executors.Executor, rec json.RawMessage, dataset string, codes []string, perSet int) ([]oracleVerdict, error) {
	rest, err := json.Marshal(map[string]any{"dataset": dataset, "candidates": codes, "timeout_per_task": perSet})
	if err != nil {
		return nil, err
	}
	// The record goes as stored: Python's JSON (NaN, Infinity), which
	// encoding/json would refuse.
	in := `{"task": ` + string(rec) + `, ` + string(rest[1:])
	res, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: evalplusOracle, Stdin: in,
		// 12 GiB for the whole oracle, as EvalPlus gives each forked child
		// 4 GiB of its own. The fork shares the expected outputs
		// copy-on-write, and touching them copies them: HumanEval/130's
		// reach some 500 MB (the sandbox's default 512 MiB killed the
		// child, which EvalPlus reads as a timeout), Mbpp/255's 1.3 GB (at
		// 4 GiB for parent and child together a candidate ran out of
		// memory where the canonical one did not; at 8 GiB the oracle
		// failed Mbpp/255's canonical solution under load).
		Limits: executors.Limits{Timeout: 30 * time.Minute, CPUTime: 31 * time.Minute, OutputBytes: 1 << 20, MemoryBytes: 12 << 30}})
	if err != nil {
		return nil, err
	}
	var out struct {
		Verdicts []oracleVerdict `json:"verdicts"`
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &out); err != nil || len(out.Verdicts) != len(codes) {
		return nil, fmt.Errorf("oracle: exit %d, timed out %v, %d verdicts for %d candidates: %v\nstderr: %s",
			res.ExitCode, res.TimedOut, len(out.Verdicts), len(codes), err, res.Stderr)
	}
	return out.Verdicts, nil
}

var reTaskID = regexp.MustCompile(`"task_id":\s*"([^"]+)"`)

// rawRecords reads an EvalPlus release file as EvalPlus does: task_id to
// the record as stored.
func rawRecords(t *testing.T, rel string) map[string]json.RawMessage {
	t.Helper()
	sc := bufio.NewScanner(sharedtest.Open(t, rel))
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	out := map[string]json.RawMessage{}
	for sc.Scan() {
		line := slices.Clone(sc.Bytes())
		m := reTaskID.FindSubmatch(line)
		if m == nil {
			t.Fatalf("%s: a record without task_id", rel)
		}
		out[string(m[1])] = line
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEvalPlusDifferential judges the canonical solution of each task, the
// mutants of internal/mutate's operators (the timeout ones included) and the
// hand-made wrong solutions above twice: with this harness, through the
// evaluator exactly as `eval` judges an answer, and with EvalPlus's own
// evaluation code (testdata/evalplus_oracle.py) on the very code the
// harness judged. Every canonical solution must pass both with no input
// skipped, and the two verdicts (base, and base+plus) must agree on every
// candidate. The default run takes diffSample; CODEFEEDBACK_EVALPLUS_FULL=1
// takes every task, CODEFEEDBACK_EVALPLUS_TASKS=Mbpp/2,HumanEval/5 those
// (with the full sweep's choice of candidates when both are set).
func TestEvalPlusDifferential(t *testing.T) {
	full := os.Getenv(envFullSweep) != ""
	ex := sandbox(t)
	if full {
		// A wider pool for the sweep: most of its time is waiting for a
		// loaded CPU.
		wide, err := executors.Open(context.Background(), "bwrap://?pool=3")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wide.Close() })
		ex = wide
	}
	ev, err := evaluate.New(evaluate.Options{Model: evaluate.CanonicalModel}, nil, nil, ex, nil)
	if err != nil {
		t.Fatal(err)
	}
	mut := &mutate.Mutator{Exec: ex, PerOperator: 1}
	ops := mutate.Operators(mutate.Syntax, mutate.Name, mutate.Type, mutate.Logic, mutate.Timeout)
	var (
		mu                    sync.Mutex
		checked, differ, pass int
		byLabel               = map[string][2]int{} // label -> checked, EvalPlus passes
	)
	start := time.Now()
	for _, b := range []struct{ name, file, dataset string }{
		{evaluate.HumanEvalPlus, "evalplus/HumanEvalPlus.jsonl.gz", "humaneval"},
		{evaluate.MBPPPlus, "evalplus/MbppPlus.jsonl.gz", "mbpp"},
	} {
		t.Run(b.name, func(t *testing.T) {
			recs := rawRecords(t, b.file)
			tasks := load(t, b.name, 0)
			ids := os.Getenv(envTasks)
			if full && ids == "" && len(tasks) != len(recs) {
				t.Errorf("%d tasks loaded from %d records: none may be skipped", len(tasks), len(recs))
			}
			if !full || ids != "" {
				sample := diffSample
				if ids != "" {
					sample = strings.Split(ids, ",")
				}
				tasks = slices.DeleteFunc(tasks, func(tk evaluate.Task) bool { return !slices.Contains(sample, tk.Problem.ID) })
			}
			g, ctx := errgroup.WithContext(context.Background())
			g.SetLimit(2)
			if full {
				g.SetLimit(3)
			}
			for n, task := range tasks {
				g.Go(func() error {
					id := task.Problem.ID
					t0 := time.Now()
					program := task.Problem.Program()
					cands := []candidate{{"canonical", program}}
					ms, err := mut.Mutate(ctx, program, 1, ops)
					if err != nil {
						return fmt.Errorf("%s: mutate: %w", id, err)
					}
					// Three mutants a task (two in the full sweep), the
					// operators taken in turn across tasks so that every
					// one is used; the full sweep takes half of the
					// hand-made ones, in turn too.
					nMut, hand := 3, wrongByHand(program, task.EntryPoint)
					if full {
						nMut = 2
						half := hand[:0:0]
						for i, c := range hand {
							if (i+n)%2 == 0 {
								half = append(half, c)
							}
						}
						hand = half
					}
					for i := range min(nMut, len(ms)) {
						m := ms[(n+i)%len(ms)]
						cands = append(cands, candidate{"mutant " + m.Operator, m.Code})
					}
					cands = append(cands, hand...)
					// One timer-proof solution in the sample, one in 25
					// tasks in the sweep: each waits out a set's deadline.
					timerTask := id == "Mbpp/2" || full && n%25 == 0
					if timerTask {
						cands = append(cands, timerProof(program, task.EntryPoint))
					}
					rounds := make([]evaluate.Round, len(cands))
					codes := make([]string, len(cands))
					for i, c := range cands {
						rd, err := ev.JudgeAnswer(ctx, task, "```python\n"+strings.TrimRight(c.code, "\n")+"\n```\n")
						if err != nil {
							return fmt.Errorf("%s %s: %w", id, c.label, err)
						}
						rounds[i], codes[i] = rd, rd.Code
					}
					tOurs := time.Since(t0)
					nTimed := len(codes)
					if timerTask {
						nTimed--
					}
					want, err := runOracle(ctx, ex, recs[id], b.dataset, codes[:nTimed], 600)
					if err != nil {
						return fmt.Errorf("%s: %w", id, err)
					}
					if timerTask {
						// Its own oracle run, with a short deadline: the
						// verdict of a solution that never ends does not
						// depend on it.
						w, err := runOracle(ctx, ex, recs[id], b.dataset, codes[nTimed:], 5)
						if err != nil {
							return fmt.Errorf("%s: %w", id, err)
						}
						want = append(want, w...)
					}
					// EvalPlus's limits are wall-clock time: on a loaded
					// machine its own code fails even the canonical solution
					// of a heavy task (Mbpp/255 at load 30-36). A verdict
					// that differs only by such a timeout is taken once
					// more, alone, and the second one stands.
					for i := range cands {
						if i >= nTimed || !wallTimeout(want[i]) || agrees(rounds[i], want[i]) {
							continue
						}
						w, err := runOracle(ctx, ex, recs[id], b.dataset, codes[i:i+1], 600)
						if err != nil {
							return fmt.Errorf("%s: %w", id, err)
						}
						t.Logf("%s %s: EvalPlus's verdict rested on its wall-clock limit (%s%s); taken again alone: base %s, plus %s",
							id, cands[i].label, want[i].BaseWhy, want[i].PlusWhy, w[0].Base, w[0].Plus)
						want[i] = w[0]
					}
					t.Logf("%s: %d candidates, harness %s, EvalPlus %s", id, len(cands), tOurs.Round(time.Millisecond), (time.Since(t0) - tOurs).Round(time.Millisecond))
					mu.Lock()
					defer mu.Unlock()
					for i, c := range cands {
						rd, w := rounds[i], want[i]
						wantAll := w.Base == "pass" && w.Plus == "pass"
						checked++
						bl := byLabel[strings.Fields(c.label)[0]]
						bl[0]++
						if wantAll {
							pass++
							bl[1]++
						}
						byLabel[strings.Fields(c.label)[0]] = bl
						if !agrees(rd, w) {
							differ++
							t.Errorf("%s %s: harness base %v, base+plus %v; EvalPlus base %s %s, plus %s %s; feedback:\n%s",
								id, c.label, rd.BasePassed, rd.Passed, w.Base, w.BaseWhy, w.Plus, w.PlusWhy, feedbackOf(rd))
						}
						if c.label == "canonical" {
							if !rd.Passed || !wantAll {
								t.Errorf("%s canonical: harness %v, EvalPlus base %s %s plus %s %s; feedback:\n%s", id, rd.Passed, w.Base, w.BaseWhy, w.Plus, w.PlusWhy, feedbackOf(rd))
							}
							if rd.Plus == nil || rd.Plus.Skipped != 0 {
								t.Errorf("%s canonical: inputs skipped (the reference failed on them): %+v", id, rd.Plus)
							}
						}
						if fb := harness.PlusFeedback(*rd.Plus); claimsSame(fb) {
							t.Errorf("%s %s: feedback claims expected X, got X:\n%s", id, c.label, fb)
						}
					}
					return nil
				})
			}
			if err := g.Wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Logf("EvalPlus differential (full=%v): %d candidates checked (%d pass under EvalPlus's rules), %d verdicts differ, in %s; by kind (checked, EvalPlus passes): %v",
		full, checked, pass, differ, time.Since(start).Round(time.Second), byLabel)
}

// wallTimeout reports a verdict of EvalPlus's that failed a set on its
// wall-clock limits (an input's time limit, or the set's deadline).
func wallTimeout(w oracleVerdict) bool {
	why := w.BaseWhy + " " + w.PlusWhy
	return strings.Contains(why, "TimeoutException") || strings.Contains(why, "deadline") || w.Base == "timeout" || w.Plus == "timeout"
}

// agrees reports whether the harness's verdicts equal EvalPlus's.
func agrees(rd evaluate.Round, w oracleVerdict) bool {
	return rd.BasePassed == (w.Base == "pass") && rd.Passed == (w.Base == "pass" && w.Plus == "pass")
}

func feedbackOf(rd evaluate.Round) string {
	if rd.Plus != nil {
		return rd.Exec.ErrorLine + "\n" + rd.Base.Feedback + plusText(rd)
	}
	return rd.Base.Feedback
}

func plusText(rd evaluate.Round) string {
	var b strings.Builder
	for _, f := range rd.Plus.Failures {
		fmt.Fprintf(&b, "%s %s %s: expected %s, got %s %s %s\n", f.Set, f.Kind, f.Input, f.Expected, f.Actual, f.Exception, f.Message)
	}
	if rd.Plus.Load != nil {
		fmt.Fprintf(&b, "load: %+v\n", *rd.Plus.Load)
	}
	return b.String()
}

// claimsSame reports a feedback line "expected X, got X".
func claimsSame(fb string) bool {
	for _, line := range strings.Split(fb, "\n") {
		_, rest, ok := strings.Cut(line, ": expected ")
		if !ok {
			continue
		}
		exp, got, ok := strings.Cut(rest, ", got ")
		if ok && exp == strings.TrimSpace(got) {
			return true
		}
	}
	return false
}
