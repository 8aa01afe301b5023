package feedbackloop

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/gates"
	"github.com/codefeedback/codefeedback/schema"
)

// emptyProbe is the Python run after the answer's code: it takes the first
// call of the function in the problem's tests, empties its first
// collection argument ([], "", (), {}), and calls the function with it.
//
//go:embed probe_empty.py
var emptyProbe string

var (
	// probeLineRe reads the probe's report lines.
	probeLineRe = regexp.MustCompile(`(?m)^PROBE:(call|ok|none) ?(.*)$`)
	// quotedNameRe: a name in backquotes, as requests quote functions.
	quotedNameRe = regexp.MustCompile("`([A-Za-z_]\\w*)(?:\\(\\))?`")
)

// emptyVerdict answers a request about empty inputs by running the code on
// one: "the same path already handles empty input" over code that crashes
// on it teaches a false claim, and so does a revision that still crashes
// by accident. A revision that now raises on purpose where the code
// before returned a value for empty input fails too: the value was the
// function's own answer, and an error is a choice the task does not
// imply.
func (r *run) emptyVerdict(ctx context.Context, turn Turn, request, before, code string) (gates.Verdict, error) {
	if !gates.AsksAboutEmpty(request) {
		return gates.Verdict{}, nil
	}
	after, err := r.probe(ctx, turn, code, request, "empty")
	if err != nil || !after.v.OK() || !after.raised || before == "" {
		return after.v, err
	}
	was, err := r.probe(ctx, turn, before, request, "empty")
	if err != nil || was.value == "" {
		return gates.Verdict{}, err
	}
	return gates.Verdict{Reason: "empty_raise_over_value", Detail: fmt.Sprintf("%s returned %s", was.call, was.value)}, nil
}

// probeResult is what an edge-input probe saw: the verdict, the call it
// made, the value returned (Python's repr, "" when none) and whether the
// call ended at a raise statement of the code.
type probeResult struct {
	v      gates.Verdict
	call   string
	value  string
	raised bool
}

// probeEdge runs code on an edge input of kind "empty" or "single" (see
// probe); a crash at an explicit raise is handled behaviour; so is a
// returned value.
func (r *run) probeEdge(ctx context.Context, turn Turn, code, hint, kind string) (gates.Verdict, error) {
	res, err := r.probe(ctx, turn, code, hint, kind)
	return res.v, err
}

// probe runs code on an edge input of kind "empty" or "single" (a
// one-element collection; see emptyProbe); hint is text that may quote the
// function meant. Only Python problems with tests are probed (the tests
// show how the function is called); any other case, or a probe that could
// not build a call, passes. The probe runs outside the dialogue, once per
// function and code.
func (r *run) probe(ctx context.Context, turn Turn, code, hint, kind string) (probeResult, error) {
	p := turn.Problem
	if r.lang != "python" || p == nil || len(p.Tests) == 0 {
		return probeResult{}, nil
	}
	name := probeTarget(p, code, hint)
	if name == "" {
		return probeResult{}, nil
	}
	key := kind + "\x00" + name + "\x00" + code
	if v, ok := r.probed[key]; ok {
		return v, nil
	}
	src := fmt.Sprintf("%s\n\n_PROBE_TESTS = %s\n_PROBE_NAME = %s\n_PROBE_KIND = %s\n%s", strings.TrimRight(code, "\n"),
		strconv.Quote(strings.Join(p.Tests, "\n")), strconv.Quote(name), strconv.Quote(kind), emptyProbe)
	res, err := r.s.Exec.Run(ctx, executors.Request{Language: executors.Python, Code: src, Limits: executors.Limits{Timeout: r.s.opts.Timeout}})
	if err != nil {
		return probeResult{}, fmt.Errorf("simulate: %s-input probe of %s: %w", kind, name, err)
	}
	v := probeOf(res)
	if r.probed == nil {
		r.probed = map[string]probeResult{}
	}
	r.probed[key] = v
	return v, nil
}

// claimVerdict checks what an answer's prose says, unasked, about empty
// or single-element input (gates.EdgeClaims) by running its code on such
// an input. When a run shows the claim false it returns the verdict, the
// repair to send and the sentences that make the claim.
func (r *run) claimVerdict(ctx context.Context, turn Turn, text, code string) (gates.Verdict, string, []string, error) {
	claims := gates.EdgeClaims(text)
	if len(claims) == 0 {
		return gates.Verdict{}, "", nil, nil
	}
	kinds := []string{"empty"}
	if gates.NamesSingleElement(strings.Join(claims, " ")) {
		kinds = append(kinds, "single")
	}
	for _, kind := range kinds {
		v, err := r.probeEdge(ctx, turn, code, text, kind)
		if err != nil {
			return gates.Verdict{}, "", nil, err
		}
		if v.OK() {
			continue
		}
		repair := fmt.Sprintf("Your answer could not be used: it says %q, but running %s. Answer again: either make the code handle that input explicitly (return the value the task implies, or raise a ValueError that says why), or leave that claim out; then the complete code in one ```%s block, then a short summary.", claims[0], v.Detail, r.lang)
		return gates.Verdict{Reason: "false_edge_claim", Detail: fmt.Sprintf("claim: %s\nbut running %s", strings.Join(claims, " "), v.Detail)}, repair, claims, nil
	}
	return gates.Verdict{}, "", nil, nil
}

// probeTarget is the function the probe calls: the one the request quotes
// in backquotes, else the problem's entry point, else the last function
// the code defines; "" when the code does not define it.
func probeTarget(p *schema.Problem, code, request string) string {
	defs := map[string]bool{}
	last := ""
	for _, m := range defNameRe.FindAllStringSubmatch(code, -1) {
		defs[m[1]] = true
		last = m[1]
	}
	for _, m := range quotedNameRe.FindAllStringSubmatch(request, -1) {
		if defs[m[1]] {
			return m[1]
		}
	}
	if defs[p.EntryPoint] {
		return p.EntryPoint
	}
	return last
}

// probeOf reads a probe's run (see probeResult): a call that raised, not
// at a raise statement of the code, fails the request.
func probeOf(res executors.Result) probeResult {
	var out probeResult
	for _, m := range probeLineRe.FindAllStringSubmatch(res.Stdout, -1) {
		switch m[1] {
		case "none":
			return probeResult{}
		case "ok":
			out.value = m[2]
			return out
		case "call":
			out.call = m[2]
		}
	}
	if out.call == "" || res.TimedOut || res.OOM {
		return probeResult{} // the code did not get to the call, or ran long: not this check's to judge
	}
	if explicitRaise(res.Stderr) {
		out.raised = true
		return out
	}
	out.v = gates.Verdict{Reason: "empty_input_crashes", Detail: fmt.Sprintf("%s raises %s", out.call, lastLine(res.Stderr))}
	return out
}

// explicitRaise reports whether a Python traceback ends at a raise
// statement: the error is behaviour the code chose.
func explicitRaise(tb string) bool {
	lines := strings.Split(strings.TrimRight(tb, "\n"), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(strings.TrimSpace(lines[i]), "File ") {
			if i+1 < len(lines) {
				return strings.HasPrefix(strings.TrimSpace(lines[i+1]), "raise")
			}
			return false
		}
	}
	return false
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return gates.Cut(s, 200)
}
