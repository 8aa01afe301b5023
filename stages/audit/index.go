package audit

import (
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
)

// Benchmark is a named set of problems to audit against.
type Benchmark struct {
	Name     string
	Problems []schema.Problem
}

// winRef locates a line window in a benchmark task: the task and the
// position of the window's first line among the task's code lines.
type winRef struct {
	task, pos int32
}

// taskInfo is what the index keeps of one problem.
type taskInfo struct {
	id    string
	lines int // code lines after normalisation and filtering
}

// Index is the lookup structure of one benchmark, built once and read by
// many goroutines: after NewIndex returns it is never written, so it is safe
// for concurrent use.
type Index struct {
	name  string
	tasks []taskInfo
	// windows maps the hash of w consecutive code lines of a task block to
	// every place it occurs.
	windows map[uint64][]winRef
	// lineText maps a code line's hash to its text, for the shared-lines list.
	lineText map[uint64]string
	// grams maps a token n-gram hash to the tasks holding it (each task once).
	grams map[uint64][]int32
}

// Name returns the benchmark name.
func (x *Index) Name() string { return x.name }

// Tasks returns the number of problems indexed.
func (x *Index) Tasks() int { return len(x.tasks) }

// taskCode returns a problem's code blocks: the solution (with the prompt in
// front when the prompt is a HumanEval-style signature of the entry point,
// since the canonical solution is only the body), the tests as one block so
// consecutive asserts form windows, and any setup code.
func taskCode(p *schema.Problem) []string {
	sol := p.Solution
	if p.Prompt != "" && p.EntryPoint != "" && strings.Contains(p.Prompt, "def "+p.EntryPoint) &&
		!strings.Contains(p.Solution, "def "+p.EntryPoint) {
		sol = p.Prompt + sol
	}
	blocks := []string{sol, strings.Join(p.Tests, "\n")}
	if p.Setup != "" {
		blocks = append(blocks, p.Setup)
	}
	return blocks
}

// taskText returns the texts of a problem the n-gram measure reads: its
// statement, prompt, solution, tests and setup, each tokenised on its own.
func taskText(p *schema.Problem) []string {
	out := []string{p.Text}
	if p.Prompt != "" && p.Prompt != p.Text {
		out = append(out, p.Prompt)
	}
	out = append(out, p.Solution)
	out = append(out, p.Tests...)
	if p.Setup != "" {
		out = append(out, p.Setup)
	}
	return out
}

// NewIndex builds the line-window and n-gram index of a benchmark. window is
// the number of consecutive code lines that must match (>= 1) and n the
// n-gram length (>= 1).
func NewIndex(b Benchmark, lo LineOptions, window, n int) (*Index, error) {
	if window < 1 || n < 1 {
		return nil, fmt.Errorf("audit: index %s: window %d and n %d must be >= 1", b.Name, window, n)
	}
	if len(b.Problems) == 0 {
		return nil, fmt.Errorf("audit: index %s: benchmark has no problems", b.Name)
	}
	x := &Index{
		name:     b.Name,
		tasks:    make([]taskInfo, len(b.Problems)),
		windows:  make(map[uint64][]winRef),
		lineText: make(map[uint64]string),
		grams:    make(map[uint64][]int32),
	}
	var lh, wh, th, gh []uint64
	var toks []span
	for ti := range b.Problems {
		p := &b.Problems[ti]
		pos := 0
		for _, block := range taskCode(p) {
			lh = lh[:0]
			for _, l := range lo.CodeLines(block) {
				h := hashString(l)
				lh = append(lh, h)
				x.lineText[h] = l
			}
			wh = rollingHashes(lh, window, wh[:0])
			for i, h := range wh {
				refs := x.windows[h]
				if k := len(refs); k > 0 && refs[k-1].task == int32(ti) {
					continue // a repeated window inside one task adds nothing
				}
				x.windows[h] = append(refs, winRef{task: int32(ti), pos: int32(pos + i)})
			}
			pos += len(lh)
		}
		x.tasks[ti] = taskInfo{id: p.ID, lines: pos}
		for _, t := range taskText(p) {
			toks = tokenize(t, toks)
			th = tokenHashes(toks, th[:0])
			gh = rollingHashes(th, n, gh[:0])
			for _, h := range gh {
				ts := x.grams[h]
				if k := len(ts); k > 0 && ts[k-1] == int32(ti) {
					continue
				}
				x.grams[h] = append(ts, int32(ti))
			}
		}
	}
	return x, nil
}

// tokenHashes appends the hashes of toks to out.
func tokenHashes(toks []span, out []uint64) []uint64 {
	for _, t := range toks {
		out = append(out, t.hash)
	}
	return out
}
