package harness

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

//go:embed batch.py
var batchSource string

// BatchItem is one candidate of a batch (see JudgeBatch).
type BatchItem struct {
	Code string
	// Opts are the options of the candidate's own program: its verdict is
	// the one Judge(p, Code, Opts) gives.
	Opts Options
	// Group and Accept make a stop rule: once BatchOptions.Quota items of a
	// group were judged with an outcome (Verdict.Outcome, module prefix
	// dropped) in their Accept list, later items of the group are skipped.
	Group  string
	Accept []string
	// Gate stops the batch when this item is judged and does not pass
	// (a reference solution that fails makes its mutants pointless).
	Gate bool
}

// BatchOptions tune JudgeBatch. Zero fields take the defaults.
type BatchOptions struct {
	// Quota is the stop rule's count per group (default 1).
	Quota int
	// CaseTimeout is the judge's per-test timer inside the batch (default
	// 1 s): a test that runs longer makes its item unusable, to be judged
	// on its own with its own limits.
	CaseTimeout time.Duration
	// Timeout bounds the whole batch run (default 60 s); items it did not
	// reach are unusable.
	Timeout time.Duration
	// Limits are the sandbox limits of the batch run (Timeout and
	// OutputBytes are set from the items).
	Limits executors.Limits
}

// JudgeBatch judges several candidates of problem p in one sandbox run: the
// judge is loaded once and judges each candidate in the same interpreter,
// in item order, instead of forking a fresh run per candidate, which on a
// virtual machine costs more than judging a small candidate. It returns a
// verdict per item and whether that verdict is usable: equal to what Judge
// gives for the item's own program, which its execution record names.
//
// An item is unusable when it was skipped by the stop rule or the gate,
// when the batch never reached it, or when its run here could differ from
// a run of its own: a test timed out under the short batch timer, the
// judge ran for half the item's time limit or more, the candidate wrote to
// stderr, called os._exit, or ran out of stack (the batch's limit is 50
// frames stricter) or memory. Unusable items are judged with Judge by the
// caller. Candidates of one batch share an interpreter, so one could change
// state another sees (a patched standard-library module, say): batch only
// candidates derived from one source, such as mutants of one solution.
//
// Only Python problems can be batched; an error means the problem cannot
// be judged or the sandbox itself failed.
func JudgeBatch(ctx context.Context, ex executors.Executor, p schema.Problem, items []BatchItem, bo BatchOptions) ([]Verdict, []bool, error) {
	if bo.Quota <= 0 {
		bo.Quota = 1
	}
	if bo.CaseTimeout <= 0 {
		bo.CaseTimeout = time.Second
	}
	if bo.Timeout <= 0 {
		bo.Timeout = 60 * time.Second
	}
	progs := make([]Program, len(items))
	type wireItem struct {
		Payload json.RawMessage `json:"payload"`
		Group   string          `json:"group,omitempty"`
		Accept  []string        `json:"accept,omitempty"`
		Gate    int             `json:"gate,omitempty"` // 1: a Python literal, unlike true
	}
	wire := make([]wireItem, len(items))
	h := sha256.New()
	for i, it := range items {
		pr, err := Build(p, it.Code, it.Opts)
		if err != nil {
			return nil, nil, err
		}
		progs[i] = pr
		wire[i] = wireItem{Payload: json.RawMessage(pr.payload), Group: it.Group, Accept: it.Accept}
		if it.Gate {
			wire[i].Gate = 1
		}
		h.Write([]byte(pr.marker + "\n"))
	}
	marker := "@@cfbatch:" + hex.EncodeToString(h.Sum(nil)[:12])
	lit, err := pyLiteral(map[string]any{
		"marker": marker, "quota": bo.Quota, "case_timeout": bo.CaseTimeout.Seconds(), "items": wire,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("harness: encode batch: %w", err)
	}
	lim := bo.Limits
	lim.Timeout = bo.Timeout
	if lim.CPUTime < lim.Timeout {
		lim.CPUTime = lim.Timeout
	}
	// Each judge keeps its records under outputBudget, plus the
	// candidate's stdout copy and the batch's own line.
	lim.OutputBytes = min(len(items)*(outputBudget+8<<10+1<<10)+minOutputBytes, 32<<20)
	req := executors.Request{Language: executors.Python, Code: bootSource + batchSource + "\n_cf_batch(" + lit + ")\n", Limits: lim}
	if code := judgeBytecode(ctx, ex); code != nil {
		req.Files = map[string][]byte{bytecodeFile: code}
	}
	res, err := ex.Run(ctx, req)
	if err != nil {
		return nil, nil, fmt.Errorf("harness: batch of problem %q: %w", p.ID, err)
	}
	type status struct {
		I       int     `json:"i"`
		Clean   bool    `json:"clean"`
		Seconds float64 `json:"seconds"`
	}
	done := map[int]status{}
	lines := map[string][]string{} // program marker -> its lines
	want := map[string]bool{}
	for _, pr := range progs {
		want[pr.marker] = true
	}
	for _, line := range strings.SplitAfter(res.Stdout, "\n") {
		if !strings.HasSuffix(line, "\n") {
			break // cut by the output cap
		}
		if rest, ok := strings.CutPrefix(line, marker+" item "); ok {
			var st status
			if json.Unmarshal([]byte(rest), &st) == nil && st.I >= 0 && st.I < len(items) {
				done[st.I] = st
			}
			continue
		}
		if m, _, ok := strings.Cut(line, " "); ok && want[m] {
			lines[m] = append(lines[m], line)
		}
	}
	verdicts := make([]Verdict, len(items))
	usable := make([]bool, len(items))
	for i, pr := range progs {
		st, ok := done[i]
		if !ok || !st.Clean {
			continue
		}
		d := time.Duration(st.Seconds * float64(time.Second))
		if d >= pr.opts.Timeout/2 {
			continue
		}
		r := executors.Result{Stdout: strings.Join(lines[pr.marker], ""), Duration: d, Driver: res.Driver, Image: res.Image}
		v := pr.Decode(r)
		if !v.Complete || v.Outcome() == OutcomeTimeout {
			continue
		}
		verdicts[i], usable[i] = v, true
	}
	return verdicts, usable, nil
}
