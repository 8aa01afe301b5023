package harness

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
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
	Code string `json:"code"`
	// Group and Accept make a stop rule: once BatchOptions.Quota items of a
	// group were judged with an outcome (Verdict.Outcome, module prefix
	// dropped) in their Accept list, later items of the group are skipped.
	Group  string   `json:"group,omitempty"`
	Accept []string `json:"accept,omitempty"`
	// Gate stops the batch when this item is judged and does not pass
	// (a reference solution that fails makes its mutants pointless).
	Gate bool `json:"-"`
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

// Batch is what JudgeBatch and JudgeBatchFrom return: per item its
// verdict and whether that verdict is usable.
type Batch struct {
	Items    []BatchItem
	Verdicts []Verdict
	Usable   []bool
	// Data is what the prelude handed back (JudgeBatchFrom); nil without.
	Data json.RawMessage
}

// JudgeBatch judges several candidates of problem p in one sandbox run: the
// judge is loaded once and judges each candidate in the same interpreter,
// in item order, instead of forking a fresh run per candidate, which on a
// virtual machine costs more than judging a small candidate. Each usable
// verdict is the one Judge(p, item.Code, opts) gives, and its execution
// record names that program.
//
// An item is unusable when it was skipped by the stop rule or the gate,
// when the batch never reached it, or when its run here could differ from
// a run of its own: a test timed out under the short batch timer, the
// judge ran for half the time limit or more, the candidate wrote to
// stderr, called os._exit, or ran out of stack (the batch's limit is 50
// frames stricter) or memory. Unusable items are judged with Judge by the
// caller. Candidates of one batch share an interpreter, so one could change
// state another sees (a patched standard-library module, say): batch only
// candidates derived from one source, such as mutants of one solution.
//
// Only Python problems can be batched; an error means the problem cannot
// be judged or the sandbox itself failed.
func JudgeBatch(ctx context.Context, ex executors.Executor, p schema.Problem, opts Options, items []BatchItem, bo BatchOptions) (Batch, error) {
	return judgeBatch(ctx, ex, p, opts, items, "", nil, bo)
}

// JudgeBatchFrom is JudgeBatch with items made inside the run by prelude,
// Python source that defines cf_items(arg): it gets arg (JSON-encoded as a
// Python literal: use 1 and 0, not booleans) and returns (data, items),
// data anything json.dumps takes, handed back as Batch.Data, and items
// dicts {"code", "group", "accept", "gate"}. A prelude that fails is an
// error.
func JudgeBatchFrom(ctx context.Context, ex executors.Executor, p schema.Problem, opts Options, prelude string, arg any, bo BatchOptions) (Batch, error) {
	return judgeBatch(ctx, ex, p, opts, nil, prelude, arg, bo)
}

type wireItem struct {
	BatchItem
	Gate int `json:"gate,omitempty"` // 1: a Python literal, unlike true
}

func judgeBatch(ctx context.Context, ex executors.Executor, p schema.Problem, opts Options, items []BatchItem, prelude string, arg any, bo BatchOptions) (Batch, error) {
	if bo.Quota <= 0 {
		bo.Quota = 1
	}
	if bo.CaseTimeout <= 0 {
		bo.CaseTimeout = time.Second
	}
	if bo.Timeout <= 0 {
		bo.Timeout = 60 * time.Second
	}
	tmpl, err := Build(p, "", opts)
	if err != nil {
		return Batch{}, err
	}
	spec := map[string]any{"quota": bo.Quota, "case_timeout": bo.CaseTimeout.Seconds(), "template": json.RawMessage(tmpl.payload)}
	h := sha256.New()
	h.Write([]byte(tmpl.marker + "\n" + prelude + "\n"))
	if prelude == "" {
		wire := make([]wireItem, len(items))
		for i, it := range items {
			wire[i] = wireItem{BatchItem: it}
			if it.Gate {
				wire[i].Gate = 1
			}
			h.Write([]byte(it.Code + "\x00"))
		}
		spec["items"] = wire
	} else {
		spec["arg"] = arg
		a, _ := json.Marshal(arg)
		h.Write(a)
	}
	marker := "@@cfbatch:" + hex.EncodeToString(h.Sum(nil)[:12])
	spec["marker"] = marker
	lit, err := pyLiteral(spec)
	if err != nil {
		return Batch{}, fmt.Errorf("harness: encode batch: %w", err)
	}
	lim := bo.Limits
	lim.Timeout = bo.Timeout
	lim.CPUTime = cpuLimit(lim.CPUTime, lim.Timeout)
	// Each judge keeps its records under outputBudget, plus the
	// candidate's stdout copy and the batch's own lines.
	n := max(len(items), 32)
	lim.OutputBytes = min(n*(outputBudget+8<<10+1<<10)+minOutputBytes, 32<<20)
	code := bootSource + batchSource + "\n"
	if prelude != "" {
		code += prelude + "\n"
	}
	req := executors.Request{Language: executors.Python, Code: code + "_cf_batch(" + lit + ")\n", Limits: lim}
	if bc := judgeBytecode(ctx, ex); bc != nil {
		req.Files = map[string][]byte{bytecodeFile: bc}
	}
	res, err := ex.Run(ctx, req)
	if err != nil {
		return Batch{}, fmt.Errorf("harness: batch of problem %q: %w", p.ID, err)
	}
	type status struct {
		I       int     `json:"i"`
		Clean   bool    `json:"clean"`
		Seconds float64 `json:"seconds"`
	}
	var b Batch
	done := map[int]status{}
	lines := map[string][]string{} // item marker -> its lines
	gotItems := prelude == ""
	for _, line := range strings.SplitAfter(res.Stdout, "\n") {
		if !strings.HasSuffix(line, "\n") {
			break // cut by the output cap
		}
		m, rest, _ := strings.Cut(line, " ")
		if m != marker {
			if strings.HasPrefix(m, marker+".") {
				lines[m] = append(lines[m], line)
			}
			continue
		}
		kind, body, _ := strings.Cut(rest, " ")
		switch kind {
		case "item":
			var st status
			if json.Unmarshal([]byte(body), &st) == nil {
				done[st.I] = st
			}
		case "data":
			if b.Data == nil {
				b.Data = json.RawMessage(strings.TrimSpace(body))
			}
		case "items":
			if !gotItems {
				var ws []wireItem
				if err := json.Unmarshal([]byte(body), &ws); err != nil {
					return Batch{}, fmt.Errorf("harness: batch of problem %q: items: %w", p.ID, err)
				}
				for _, w := range ws {
					w.BatchItem.Gate = w.Gate == 1
					items = append(items, w.BatchItem)
				}
				gotItems = true
			}
		}
	}
	if !gotItems {
		return Batch{}, fmt.Errorf("%w: problem %q (exit %d, timed out %v): %s", ErrBatchPrelude, p.ID, res.ExitCode, res.TimedOut, tailString(res.Stderr, 600))
	}
	b.Items = items
	b.Verdicts = make([]Verdict, len(items))
	b.Usable = make([]bool, len(items))
	for i, it := range items {
		st, ok := done[i]
		if !ok || !st.Clean {
			continue
		}
		d := time.Duration(st.Seconds * float64(time.Second))
		pr, err := Build(p, it.Code, opts)
		if err != nil {
			return Batch{}, err
		}
		if d >= pr.opts.Timeout/2 {
			continue
		}
		im := fmt.Sprintf("%s.%d", marker, i)
		r := executors.Result{Stdout: strings.Join(lines[im], ""), Duration: d, Driver: res.Driver, Image: res.Image}
		dec := pr
		dec.marker = im
		v := dec.Decode(r)
		v.prog = pr
		if !v.Complete || v.Outcome() == OutcomeTimeout {
			continue
		}
		b.Verdicts[i], b.Usable[i] = v, true
	}
	return b, nil
}

// ErrBatchPrelude is wrapped by JudgeBatchFrom's error when its prelude
// failed.
var ErrBatchPrelude = errors.New("harness: batch prelude failed")

func tailString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
