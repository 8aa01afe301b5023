// Package verify re-checks a finished dataset (this tool's dialogues in
// any layout export writes, or any Code-Feedback-style file) as a trainer
// reads it: roles alternate sensibly, every Python code block compiles (in
// the sandbox, compile only), and every execution turn is what the code
// the turn before it shows prints when it runs again in the sandbox.
//
// An execution is re-run from the visible text: the code block of the
// assistant turn (the block the stages run: parse.Code's rule) and, for a
// test verdict, the tests the request shows ("Your code should pass these
// tests:"), judged as the stages judge; a native file's record adds what
// the text leaves out (the tests, the limits) and must name the very code
// the turn shows. The re-run's verdict and printed output are compared
// with the visible text, normalised for times, durations and memory
// addresses only. Notebook cells of one dialogue run in order in sessions
// of their own, opened fresh for that dialogue. An execution that cannot be
// re-run is counted with the reason. A turn-split export repeats each
// dialogue's earlier turns in every later sample: samples that are
// prefixes of one another are verified once, as the longest.
package verify

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/agent"
	"github.com/codefeedback/codefeedback/schema"
)

// Checks named in a Mismatch.
const (
	CheckRoles  = "roles"
	CheckParse  = "parse"
	CheckRerun  = "rerun"
	CheckText   = "text"   // a visible execution text is not what its record renders
	CheckRecord = "record" // a record does not rebuild the program it names
)

// Options tune a verification. Zero fields take defaults.
type Options struct {
	// Timeout bounds a re-run whose record names no limit, and every cell of
	// a plain Code-Feedback file (default 10s).
	Timeout time.Duration
	// Parallel is the number of dialogues checked at once (default 4).
	Parallel int
	// NoRerun checks roles and parsing only.
	NoRerun bool
	// Stored, when set, gives the native dialogue a trainer-layout one was
	// exported from (nil when there is none). A test verdict whose tests
	// the visible request does not show (simulate shows one test, LeetCode
	// none) is then re-run from the stored record's judge program, when
	// the record ran exactly the code the turn shows, and its text is
	// compared with the visible one.
	Stored func(dialogueID string) *schema.Dialogue
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	return o
}

// Mismatch is one problem found. Turn is the 0-based message index.
type Mismatch struct {
	DialogueID string `json:"dialogue_id"`
	Turn       int    `json:"turn"`
	Check      string `json:"check"`
	Detail     string `json:"detail"`
	Recorded   string `json:"recorded,omitempty"` // outcome in the file
	Rerun      string `json:"rerun,omitempty"`    // outcome of the re-run
}

func (m Mismatch) String() string {
	s := fmt.Sprintf("dialogue %s turn %d: %s: %s", m.DialogueID, m.Turn, m.Check, m.Detail)
	if m.Recorded != "" || m.Rerun != "" {
		s += fmt.Sprintf(" (recorded %s, re-run %s)", m.Recorded, m.Rerun)
	}
	return s
}

// Unverifiable is a recorded execution that could not be re-run faithfully:
// its language has no runner, or it needs a module the sandbox lacks.
type Unverifiable struct {
	DialogueID string `json:"dialogue_id"`
	Turn       int    `json:"turn"`
	Reason     string `json:"reason"`
}

// Report is the result of checking a dataset.
type Report struct {
	Dialogues int `json:"dialogues"` // samples read
	// Distinct counts the dialogues verified: samples that repeat another's
	// turns (a turn-split export) are verified as part of the longest.
	Distinct   int `json:"distinct_dialogues"`
	Messages   int `json:"messages"`
	Blocks     int `json:"code_blocks"` // python blocks compiled
	Executions int `json:"executions"`  // executions re-run (or found edited without a run)
	Agreed     int `json:"agreed"`      // re-runs with the visible verdict and output
	// Texts counts execution turns whose visible text was compared with
	// what their record renders; Unrendered those whose record names no
	// renderer (a notebook cell's record), so their text is not checked.
	Texts        int            `json:"texts_checked"`
	Unrendered   int            `json:"texts_unchecked,omitempty"`
	Unverifiable []Unverifiable `json:"unverifiable,omitempty"`
	Mismatches   []Mismatch     `json:"mismatches,omitempty"`
}

// Reasons counts the unverifiable turns by reason, for a summary.
func (r *Report) Reasons() map[string]int {
	out := map[string]int{}
	for _, u := range r.Unverifiable {
		out[u.Reason]++
	}
	return out
}

func (r *Report) add(o *Report) {
	r.Dialogues += o.Dialogues
	r.Distinct += o.Distinct
	r.Messages += o.Messages
	r.Blocks += o.Blocks
	r.Executions += o.Executions
	r.Agreed += o.Agreed
	r.Texts += o.Texts
	r.Unrendered += o.Unrendered
	r.Unverifiable = append(r.Unverifiable, o.Unverifiable...)
	r.Mismatches = append(r.Mismatches, o.Mismatches...)
}

// Checker verifies dialogues in a sandbox. Safe for concurrent use when the
// Executor is.
type Checker struct {
	Exec executors.Executor
	Opts Options
}

// Dataset checks every dialogue dialogues yields and returns the report
// with mismatches in dataset order. Consecutive samples that are prefixes
// of one another (a turn-split export's samples of one dialogue) are
// verified once, as the longest; a mismatch names the first sample that
// shows the turn. Windows of dialogues share one compile run; their
// re-runs go Parallel at a time. An error means the file could not be
// read or the sandbox failed; mismatches are not errors.
func (c *Checker) Dataset(ctx context.Context, dialogues func(yield func(*schema.Dialogue, error) bool)) (Report, error) {
	o := c.Opts.withDefaults()
	var total Report
	const window = 64
	batch := make([]*group, 0, window)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		reps, err := c.groups(ctx, batch, o)
		for i := range reps {
			total.add(&reps[i])
		}
		batch = batch[:0]
		return err
	}
	var cur *group
	for d, err := range dialogues {
		if err != nil {
			return total, err
		}
		if cur != nil && cur.absorb(d) {
			continue
		}
		if cur != nil {
			batch = append(batch, cur)
			if len(batch) == window {
				if err := flush(); err != nil {
					return total, err
				}
			}
		}
		cur = newGroup(d)
	}
	if cur != nil {
		batch = append(batch, cur)
	}
	return total, flush()
}

// Dialogue checks one dialogue.
func (c *Checker) Dialogue(ctx context.Context, d *schema.Dialogue) (Report, error) {
	reps, err := c.groups(ctx, []*group{newGroup(d)}, c.Opts.withDefaults())
	if len(reps) == 0 {
		return Report{}, err
	}
	return reps[0], err
}

// groups checks a window of dialogues: one compile run for all, then each
// dialogue's re-runs, Parallel at a time.
func (c *Checker) groups(ctx context.Context, gs []*group, o Options) ([]Report, error) {
	ds := make([]*schema.Dialogue, len(gs))
	for i, g := range gs {
		ds[i] = g.d
	}
	preps, err := c.prepare(ctx, ds)
	if err != nil {
		return nil, err
	}
	reps := make([]Report, len(gs))
	eg, gctx := errgroup.WithContext(ctx)
	eg.SetLimit(o.Parallel)
	for i, g := range gs {
		eg.Go(func() error {
			err := c.check(gctx, g, preps[i], &reps[i], o)
			g.attribute(&reps[i])
			return err
		})
	}
	return reps, eg.Wait()
}

// check verifies one dialogue (the longest sample of its group).
func (c *Checker) check(ctx context.Context, g *group, prep prepared, rep *Report, o Options) error {
	d := g.d
	*rep = Report{Dialogues: len(g.members), Distinct: 1, Messages: len(d.Messages), Blocks: prep.blocks}
	rep.Mismatches = append(rep.Mismatches, g.roles()...)
	rep.Mismatches = append(rep.Mismatches, prep.mismatches...)
	defer func() {
		sort.SliceStable(rep.Mismatches, func(i, j int) bool { return rep.Mismatches[i].Turn < rep.Mismatches[j].Turn })
	}()
	hasRecords := false
	for _, m := range d.Messages {
		hasRecords = hasRecords || (m.Exec != nil && isExecution(m))
	}
	if hasRecords {
		texts(d, rep)
	}
	if o.NoRerun {
		return nil
	}
	if agent.IsInteract(d) {
		// An InterCode episode: its actions need the task's prepared
		// environment, so they are replayed there rather than run bare.
		return c.replayInteract(ctx, d, rep)
	}
	return c.rerun(ctx, d, steps(d), prep.tests, rep)
}

// isExecution reports whether m is an execution turn: the execution role,
// or a user turn in Code-Feedback's "Execution result:" form.
func isExecution(m schema.Message) bool {
	if m.Role == schema.RoleExecution {
		return true
	}
	return m.Role == schema.RoleUser && m.Feedback == nil &&
		strings.HasPrefix(strings.TrimLeft(m.Content, " \n"), strings.TrimSpace(schema.ExecutionPrefix))
}

func prevAssistant(d *schema.Dialogue, i int) int {
	for j := i - 1; j >= 0; j-- {
		switch d.Messages[j].Role {
		case schema.RoleAssistant:
			return j
		case schema.RoleUser:
			if !isExecution(d.Messages[j]) {
				return -1
			}
		}
	}
	return -1
}

// Roles checks the turn order: an optional system turn first, then a user
// request; a request or an execution result is answered by the assistant;
// an execution result follows an assistant turn; the dialogue does not end
// on an unanswered request.
func Roles(d *schema.Dialogue) []Mismatch {
	var out []Mismatch
	bad := func(i int, f string, a ...any) {
		out = append(out, Mismatch{DialogueID: d.ID, Turn: i, Check: CheckRoles, Detail: fmt.Sprintf(f, a...)})
	}
	kind := func(m schema.Message) string {
		if isExecution(m) {
			return "execution"
		}
		return m.Role
	}
	prev := ""
	for i, m := range d.Messages {
		k := kind(m)
		switch k {
		case schema.RoleSystem:
			if i != 0 {
				bad(i, "system turn after the start")
			}
		case schema.RoleUser:
			switch prev {
			case "":
			case schema.RoleSystem, schema.RoleAssistant:
			case schema.RoleUser:
				bad(i, "two user requests in a row")
			case "execution":
				bad(i, "a user request right after an execution result, which the assistant never answered")
			}
		case schema.RoleAssistant:
			switch prev {
			case "":
				bad(i, "the dialogue starts with an assistant turn")
			case schema.RoleSystem:
				if i == 1 {
					bad(i, "the dialogue starts with an assistant turn")
				}
			case schema.RoleAssistant:
				bad(i, "two assistant turns in a row")
			}
		case "execution":
			if prev != schema.RoleAssistant {
				bad(i, "an execution result that does not follow an assistant turn (after %q)", prev)
			}
		default:
			bad(i, "unknown role %q", m.Role)
		}
		prev = k
	}
	if prev == schema.RoleUser {
		bad(len(d.Messages)-1, "the dialogue ends with an unanswered user request")
	}
	if len(d.Messages) == 0 {
		bad(0, "no messages")
	}
	return out
}

// texts compares each execution turn's visible text with what its record
// renders: a judge record renders the verdict it holds (harness
// RenderRecorded), so an edited "Execution result" text, or a record moved
// to another turn, is caught without re-running anything.
func texts(d *schema.Dialogue, rep *Report) {
	for i, m := range d.Messages {
		if m.Exec == nil || !isExecution(m) {
			continue
		}
		want, ok := harness.RenderRecorded(*m.Exec)
		if !ok {
			rep.Unrendered++
			continue
		}
		rep.Texts++
		if m.Content != want {
			rep.Mismatches = append(rep.Mismatches, Mismatch{DialogueID: d.ID, Turn: i, Check: CheckText,
				Detail: "the visible execution text is not what its record renders: " + firstDiff(m.Content, want)})
		}
	}
}

// firstDiff describes where two texts part: the visible one, and what its
// record renders.
func firstDiff(got, want string) string { return partDiff(got, want, "the record renders") }

// partDiff describes where the visible text got and the text want (named
// by other) part.
func partDiff(got, want, other string) string {
	n := 0
	for n < len(got) && n < len(want) && got[n] == want[n] {
		n++
	}
	clip := func(s string) string {
		s = s[n:]
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("at byte %d the text has %s, %s %s", n, clip(got), other, clip(want))
}

// Verdict texts the harness writes (see harness.Feedback): a test verdict
// comes from tests a Code-Feedback-layout file does not carry; a load
// failure names the exception the code raises on its own.
var (
	testsVerdictRe = regexp.MustCompile(`\A(?:All \d+ tests? passed\.|(?:Execution timed out after \S+\.\n)?\d+ of \d+ tests? failed[.;])`)
	compileFailRe  = regexp.MustCompile(`\AThe code does not compile \(([A-Za-z]+Error) at line \d+\):`)
	loadFailRe     = regexp.MustCompile(`\AThe code raised an exception before any test ran:`)
	setupFailRe    = regexp.MustCompile(`\A(?:An exception was raised in |Execution timed out after \S+ while running )`)
)

// resultText is an execution turn's text without the ExecutionPrefix.
func resultText(m schema.Message) string {
	if m.Role == schema.RoleExecution {
		return m.Content
	}
	t := strings.TrimLeft(m.Content, " \n")
	t = strings.TrimPrefix(t, strings.TrimSpace(schema.ExecutionPrefix))
	return strings.TrimLeft(t, " \n")
}

// shownException is the exception an execution text shows: a harness
// compile failure's, else the last traceback's.
func shownException(text string) string {
	t := strings.TrimPrefix(strings.TrimLeft(text, " \n"), strings.TrimSpace(schema.ExecutionPrefix))
	if m := compileFailRe.FindStringSubmatch(strings.TrimLeft(t, " \n")); m != nil {
		return m[1]
	}
	return exceptionIn(text)
}

// isSyntax reports whether an exception name means the code did not compile.
func isSyntax(exc string) bool {
	return exc == "SyntaxError" || exc == "IndentationError" || exc == "TabError"
}

var (
	// A traceback's exception line ("NameError: name 'x' is not defined"),
	// or the header of an IPython traceback ("NameError   Traceback (most recent call last)").
	excLineRe   = regexp.MustCompile(`(?m)^([A-Za-z_][A-Za-z0-9_.]*(?:Error|Exception|Exit|Interrupt|Iteration))(?::|\s*$|\s+Traceback)`)
	ansiRe      = regexp.MustCompile("\x1b\\[[0-9;]*m")
	magicLineRe = regexp.MustCompile(`(?m)^[ \t]*[%!].*$`)
)

// exceptionIn returns the last exception named in text, without a module
// prefix, or "".
func exceptionIn(text string) string {
	ms := excLineRe.FindAllStringSubmatch(ansiRe.ReplaceAllString(text, ""), -1)
	if len(ms) == 0 {
		return ""
	}
	exc := ms[len(ms)-1][1]
	if i := strings.LastIndex(exc, "."); i >= 0 {
		exc = exc[i+1:]
	}
	return exc
}
