package llmtest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"

	"github.com/codefeedback/codefeedback/internal/gates"
	openai "github.com/sashabaranov/go-openai"
)

// Misbehaviour names one way a Persona answers badly, the way real models
// were seen to: the quality gates of the stages must catch each.
type Misbehaviour string

const (
	// CodeForExplanation answers the explain prompt with a transition
	// phrase and a code block instead of prose.
	CodeForExplanation Misbehaviour = "code_for_explanation"
	// UnchangedRevision answers feedback with "You're right" and the same code.
	UnchangedRevision Misbehaviour = "unchanged_revision"
	// WrongCategory aims feedback at another category than the one asked.
	WrongCategory Misbehaviour = "wrong_category"
	// CodeInFeedback puts a corrected program into user feedback.
	CodeInFeedback Misbehaviour = "code_in_feedback"
	// YesJudge says the code is correct whatever it is.
	YesJudge Misbehaviour = "yes_judge"
	// UnreadableRubric answers the effort rubric with prose and no score.
	UnreadableRubric Misbehaviour = "unreadable_rubric"
	// NoAction answers an InterCode task in prose, with no action.
	NoAction Misbehaviour = "no_action"
	// UnparseableJSON answers a prompt that asks for JSON (feedback,
	// follow-up, judge) with prose around a broken object.
	UnparseableJSON Misbehaviour = "unparseable_json"
	// ThanksToOutput opens the writer's reply to a program's execution
	// output with "You're right, thanks", as if a person had spoken.
	ThanksToOutput Misbehaviour = "thanks_to_output"
	// SilentCode answers a test-less task with code that only defines its
	// function, never calling it, against the prompt's request to print a
	// small result: the run shows nothing. Only a Persona with Demo shows
	// it (without Demo every answer is silent).
	SilentCode Misbehaviour = "silent_code"
	// VagueDocs answers "document the arguments" with a docstring that
	// names none of them, and "explain how f works" with one that names
	// nothing of the code.
	VagueDocs Misbehaviour = "vague_docs"
	// RoteClosing replies to every accepted run with the same closing,
	// even when asked to say what is new in this one.
	RoteClosing Misbehaviour = "rote_closing"
	// TrivialTests answers "add tests" with asserts that never call the
	// code on an input (assert callable(f)).
	TrivialTests Misbehaviour = "trivial_tests"
	// ClaimedChecks answers "validate the arguments" or "guard f against
	// wrong types" with a docstring and the claim that the code already
	// checks its inputs, over code that checks nothing.
	ClaimedChecks Misbehaviour = "claimed_checks"
	// OffRequestNoChange answers a request for a layout, older Python
	// versions, less memory or speed with an unasked docstring and "no
	// code change is needed: the code already does what the task asks".
	OffRequestNoChange Misbehaviour = "off_request_no_change"
	// FalseEdgeClaim keeps saying the code already handles empty input
	// after being shown that it crashes on it, asked or not.
	FalseEdgeClaim Misbehaviour = "false_edge_claim"
	// DocOnlyEmpty answers "make f handle an empty input explicitly" with
	// a docstring and "the same path already handles empty inputs", adding
	// no code path for it.
	DocOnlyEmpty Misbehaviour = "doc_only_empty"
	// OnePassClaim closes every accepted run with "it works through its
	// input once", whether the code recurses, nests loops or not, and
	// keeps such code unchanged for speed because "it makes a single
	// pass".
	OnePassClaim Misbehaviour = "one_pass_claim"
	// UncalledClaim answers "add a companion function" with code that
	// defines it and never calls it, and closes the run with "the output
	// confirms that `f_all` handles the request".
	UncalledClaim Misbehaviour = "uncalled_claim"
	// RaiseOnEmpty answers "handle empty input explicitly" with a
	// ValueError even where the function's own lines return a value for
	// it (a product of no numbers is 1), and keeps raising when told so.
	RaiseOnEmpty Misbehaviour = "raise_on_empty"
	// DeclinesMemory keeps the code when asked for less memory ("a
	// different algorithm would be needed"), even where a generator or
	// rolling variables would do with the same one.
	DeclinesMemory Misbehaviour = "declines_memory"
	// StructureOnly explains code by walking through its lines ("a loop
	// takes i ...; it returns t") without saying what it computes.
	StructureOnly Misbehaviour = "structure_only"
	// ComputedOnceClaim keeps the code when asked to avoid recomputing
	// values because "each value it derives is computed once", whatever
	// its loops compute twice.
	ComputedOnceClaim Misbehaviour = "computed_once_claim"
	// NoReasonJudge rejects the code it finds wrong with a reason that
	// names nothing ("The code is not correct.").
	NoReasonJudge Misbehaviour = "no_reason_judge"
	// FakeSpeedup answers a request for speed with the last return put
	// through a variable and the claim that this makes the code faster.
	FakeSpeedup Misbehaviour = "fake_speedup"
)

// JudgedPrefix starts the user turn that carries a judge model's reason
// for rejecting a clean test-less run (feedbackloop.JudgedLead): the
// writer answers it as a fix of what the reason names.
const JudgedPrefix = "I checked the code against the task"

// Misbehaviours lists every misbehaviour.
var Misbehaviours = []Misbehaviour{CodeForExplanation, UnchangedRevision, WrongCategory, CodeInFeedback, YesJudge, UnreadableRubric, NoAction, UnparseableJSON, ThanksToOutput, SilentCode, VagueDocs, RoteClosing, TrivialTests, ClaimedChecks, FalseEdgeClaim, OffRequestNoChange, DocOnlyEmpty, OnePassClaim, UncalledClaim, ComputedOnceClaim, RaiseOnEmpty, StructureOnly, DeclinesMemory, NoReasonJudge, FakeSpeedup}

// Persona is a scripted model that recognises which prompt of the pipeline
// it is answering (writer, explain, judge, feedback, rubric, eval feedback)
// and answers the way a good model would, or with the misbehaviours set.
// Safe for concurrent use once built.
type Persona struct {
	// Solve returns the correct code for a task (the text of the first user
	// turn) and, optionally, a wrong first attempt that runs cleanly; ok is
	// false for a task the persona cannot solve.
	Solve func(task string) (good, first string, ok bool)
	// Act returns the gold action of an InterCode task (its query) and,
	// optionally, a wrong first action; ok is false for a task the persona
	// cannot solve.
	Act func(query string) (gold, first string, ok bool)
	// Demo, when set, returns an expression that calls the solution of a
	// task on an example input; the writer's code for that task ends by
	// printing it, as the writer prompt asks (unless SilentCode).
	Demo func(task string) (call string, ok bool)
	// Tests, when set, returns assert lines that check a task's solution:
	// asked for tests where the task's text shows none (a packed
	// dialogue's later task), the persona writes these.
	Tests func(task string) []string
	// Bad is the set of misbehaviours.
	Bad map[Misbehaviour]bool
	// Rate, when above 0, is the share of answers (drawn per request from
	// a hash of its messages, so a repair prompt draws anew) that
	// misbehave, each in one of the ways in Bad that fit the answer; 0
	// means every answer misbehaves in every way in Bad that fits.
	Rate float64
}

// Role names the prompt a chat request carries: "writer", "explain",
// "judge", "feedback", "followup", "rubric_skills", "rubric_effort",
// "eval_feedback", "agent" (an InterCode episode), or "unknown".
func Role(c Call) string {
	msgs := c.Request.Messages
	first := ""
	if len(msgs) > 0 {
		first = msgs[0].Content
	}
	last := c.LastUser()
	all := first + "\n" + last
	switch {
	case strings.Contains(first, "You annotate programming conversations"):
		return "explain"
	case strings.HasPrefix(first, "You are an agent working in"):
		return "agent"
	case strings.HasPrefix(first, "You are a programming assistant"),
		strings.Contains(first, "careful programming assistant in a conversation"):
		return "writer"
	case strings.Contains(all, "You check whether a piece of code does what a task asked for"):
		return "judge"
	case strings.Contains(all, "You play a demanding user"):
		return "feedback"
	case strings.Contains(all, "You play the user who asked a programming assistant"):
		return "followup"
	case strings.Contains(all, "The assistant's code does not pass the tests yet"):
		return "eval_feedback"
	case strings.Contains(all, "You grade programming requests"):
		return "rubric_skills"
	case strings.Contains(all, "Estimate how hard it is to produce a correct"):
		return "rubric_effort"
	}
	return "unknown"
}

// firstUser is the first user message of a request: the prompt of a
// one-shot JSON request (judge, feedback, follow-up), whatever repairs
// follow it.
func firstUser(c Call) string {
	for _, m := range c.Request.Messages {
		if m.Role == "user" {
			return m.Content
		}
	}
	return ""
}

// Script returns the persona as a Script for Server.Script.
func (p *Persona) Script() Script { return p.reply }

// applicable lists the misbehaviours that can show in an answer to c.
func applicable(c Call) []Misbehaviour {
	switch Role(c) {
	case "writer":
		last := c.LastUser()
		switch {
		case strings.HasPrefix(last, "The run above is accepted"):
			return []Misbehaviour{ThanksToOutput, OnePassClaim, UncalledClaim}
		case strings.HasPrefix(last, "Your reply could not be used: it repeats"):
			return []Misbehaviour{RoteClosing}
		case strings.HasPrefix(last, "Execution result:"):
			return []Misbehaviour{ThanksToOutput, SilentCode}
		case strings.HasPrefix(last, JudgedPrefix):
			return []Misbehaviour{SilentCode}
		case len(c.Request.Messages) > 2 && !strings.Contains(last, "is not correct"):
			if keepTopicRe.MatchString(strings.ToLower(last)) {
				return []Misbehaviour{UnchangedRevision, SilentCode, VagueDocs, TrivialTests, OffRequestNoChange, OnePassClaim, ComputedOnceClaim, DeclinesMemory, FakeSpeedup}
			}
			if asksEmpty(last) {
				return []Misbehaviour{UnchangedRevision, SilentCode, VagueDocs, TrivialTests, DocOnlyEmpty, RaiseOnEmpty}
			}
			return []Misbehaviour{UnchangedRevision, SilentCode, VagueDocs, TrivialTests, UncalledClaim}
		}
		return []Misbehaviour{SilentCode}
	case "judge":
		return []Misbehaviour{YesJudge, UnparseableJSON, NoReasonJudge}
	case "feedback", "followup":
		return []Misbehaviour{WrongCategory, CodeInFeedback, UnparseableJSON}
	case "eval_feedback":
		return []Misbehaviour{CodeInFeedback}
	case "explain":
		return []Misbehaviour{CodeForExplanation, StructureOnly}
	case "rubric_effort":
		return []Misbehaviour{UnreadableRubric}
	case "agent":
		return []Misbehaviour{NoAction}
	}
	return nil
}

// draw maps the request's messages (and salt) to a number in [0, 1),
// uniformly: a cryptographic hash, since FNV's high bits are skewed on
// short inputs (a Rate of 0.3 showed on 22% of answers).
func draw(c Call, salt string) float64 {
	h := sha256.New()
	h.Write([]byte(salt))
	for _, msg := range c.Request.Messages {
		h.Write([]byte{0})
		h.Write([]byte(msg.Content))
	}
	return float64(binary.BigEndian.Uint64(h.Sum(nil))>>11) / (1 << 53)
}

// bad reports whether the persona misbehaves in way m on call c. With a
// Rate, one draw per answer decides whether it misbehaves at all, and a
// second which of the misbehaviours in Bad that can show in it does, so
// Rate is the share of answers that misbehave; a repair prompt changes the
// request and draws anew.
func (p *Persona) bad(m Misbehaviour, c Call) bool {
	if !p.Bad[m] {
		return false
	}
	if p.Rate <= 0 {
		return true
	}
	if draw(c, "misbehave") >= p.Rate {
		return false
	}
	var on []Misbehaviour
	for _, x := range applicable(c) {
		if p.Bad[x] {
			on = append(on, x)
		}
	}
	if len(on) == 0 {
		return false
	}
	return on[int(draw(c, "which")*float64(len(on)))] == m
}

// answers are the persona's answer to each Role's prompt.
var answers = map[string]func(*Persona, Call) string{
	"writer":        (*Persona).writer,
	"explain":       (*Persona).explain,
	"agent":         (*Persona).agent,
	"judge":         (*Persona).judge,
	"feedback":      (*Persona).feedback,
	"followup":      (*Persona).followup,
	"eval_feedback": (*Persona).evalFeedback,
	"rubric_skills": func(*Persona, Call) string {
		return "Score: 4\nReason: it needs a real algorithm and care with edge cases."
	},
	"rubric_effort": func(p *Persona, c Call) string {
		if p.bad(UnreadableRubric, c) {
			return "That depends entirely on who writes it and how much time they have."
		}
		return `{"score": 4, "reason": "several cases to handle"}`
	},
}

func (p *Persona) reply(c Call) Reply {
	if answer, ok := answers[Role(c)]; ok {
		return Reply{Text: answer(p, c)}
	}
	return Reply{Text: "I am not sure what you are asking."}
}

var (
	fenceRe   = regexp.MustCompile("(?s)```[A-Za-z0-9_+-]*\n(.*?)```")
	defNameRe = regexp.MustCompile(`(?m)^def\s+([A-Za-z_]\w*)`)
)

// codeBlocks returns the code of every fenced block in s.
func codeBlocks(s string) []string {
	var out []string
	for _, m := range fenceRe.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// codeAfter is the first code block after marker in s, or "".
func codeAfter(s, marker string) string {
	if i := strings.Index(s, marker); i >= 0 {
		if b := codeBlocks(s[i:]); len(b) > 0 {
			return b[0]
		}
	}
	return ""
}

func lastCode(s string) string {
	b := codeBlocks(s)
	if len(b) == 0 {
		return ""
	}
	return b[len(b)-1]
}

func variant(key string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(n))
}

func fnName(code string) string {
	m := defNameRe.FindAllStringSubmatch(code, -1)
	if len(m) == 0 {
		return "the code"
	}
	return "`" + m[len(m)-1][1] + "`"
}

func block(code string) string { return "```python\n" + strings.TrimRight(code, "\n") + "\n```" }

// repairRe starts a pipeline's repair message: the answer before it is
// taken back and the request before that asked again.
var repairRe = regexp.MustCompile(`^Your (answer|reply|previous answer) could not be (used|read)`)

// unrepaired drops the (answer, repair) pairs at the end of msgs: the
// persona answers the request they repair afresh (the draw of a
// misbehaviour still sees the whole request, so a repair draws anew).
func unrepaired(msgs []openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	for len(msgs) >= 2 && msgs[len(msgs)-1].Role == "user" && repairRe.MatchString(msgs[len(msgs)-1].Content) {
		msgs = msgs[:len(msgs)-2]
	}
	return msgs
}

// writer plays the simulate writer: a plan and code for the task (the wrong
// first attempt when there is one), a fix after a failed run or a judge's
// rejection, a revision after feedback or a follow-up request, a prose
// reply to an accepted run; each answer with code explains before it and
// sums up after it.
func (p *Persona) writer(c Call) string {
	// Repair prompts are answered as the request they repair, except one
	// that says the reply repeated an earlier one (RoteClosing ignores it).
	varied := strings.HasPrefix(c.LastUser(), "Your reply could not be used: it repeats") && !p.bad(RoteClosing, c)
	msgs := unrepaired(c.Request.Messages)
	task, ti := "", 1
	if len(msgs) > 1 {
		task = msgs[1].Content
	}
	good, first, ok := "", "", false
	if p.Solve != nil {
		good, first, ok = p.Solve(task)
	}
	if !ok {
		return "I cannot solve this task."
	}
	// A packed dialogue's later request that is a task of its own is the
	// current task: the answer's code, names and demonstration follow it,
	// as a good model's do (a Solve that answers anything cannot tell).
	if !p.catchAll() {
		for i := 2; i < len(msgs); i++ {
			if m := msgs[i]; m.Role == "user" && !strings.HasPrefix(m.Content, "Execution result:") {
				if g, f, ok := p.Solve(m.Content); ok {
					task, ti, good, first = m.Content, i, g, f
				}
			}
		}
	}
	answers, feedbacks := 0, 0
	prevCode, revision := "", ""
	for i, m := range msgs {
		switch {
		case m.Role == "assistant":
			if i > ti {
				answers++
			}
			if c := lastCode(m.Content); c != "" {
				prevCode, revision = c, m.Content
			}
		case m.Role == "user" && i > ti && !strings.HasPrefix(m.Content, "Execution result:"):
			feedbacks++
		}
	}
	last := ""
	if len(msgs) > 0 {
		last = msgs[len(msgs)-1].Content
	}
	name := fnName(good)
	thanks := ""
	if strings.HasPrefix(last, "Execution result:") && p.bad(ThanksToOutput, c) {
		thanks = "You're right, thanks for running it! "
	}
	switch {
	case strings.HasPrefix(last, "The run above is accepted") && varied:
		// Told it repeated itself, it says what this run adds: the round
		// it closes.
		// The round is named by its request, which a reader sees, not by
		// a count of answers.
		asked := fmt.Sprintf("answer %d", answers)
		for i := len(msgs) - 2; i > ti; i-- {
			if m := msgs[i]; m.Role == "user" && !strings.HasPrefix(m.Content, "Execution result:") {
				// quoted as words: a name in backquotes in it would read as
				// a claim about that function
				asked = "your request \"" + strings.ReplaceAll(strings.Join(strings.Fields(m.Content), " "), "`", "") + "\""
				break
			}
		}
		if strings.Contains(last, "nothing was printed") {
			// a run that printed nothing showed no result of any function
			return fmt.Sprintf("This run loads the code as it stands after %s: it ran without errors and printed nothing, since the code only defines %s for you to call.", asked, name)
		}
		if strings.HasPrefix(revision, "No change is needed") || strings.HasPrefix(revision, "I leave") {
			return fmt.Sprintf("This run checks %s as it stands after %s, which kept the code as it was: the result is still the one the task describes for the example.", name, asked)
		}
		return fmt.Sprintf("This run checks %s as revised for %s: the change asked for is in, and the result is still the one the task describes for the example.", name, asked)
	case strings.HasPrefix(last, "The run above is accepted"):
		return thanks + p.closing(last, prevCode, task, c)
	case answers == 0 && ti > 1:
		// A new task of its own: answered afresh, as a good model answers
		// the next query of a packed dialogue.
		code := good
		if first != "" {
			code = first
		}
		lead := fmt.Sprintf("This is a new task, so I write %s from scratch rather than changing the code above: it follows the new statement directly, and the run will check it.", name)
		if what := purpose(task, name); what != "" && !p.bad(StructureOnly, c) {
			lead = fmt.Sprintf("This is a new task, so I write %s from scratch rather than changing the code above. ", name) + what + " The run will check it."
		}
		return lead +
			"\n\n" + block(p.demo(task, code, c)) + "\n\n" + after(name, code, variant(last+"after", 3))
	case answers == 0:
		code := good
		if first != "" {
			code = first
		}
		plans := []string{
			"I'll write %s so that %s, and it returns the result. " + firstCheck(task),
			"The plan: implement %s in small steps, keeping each intermediate value in a named variable so the logic is easy to follow. Then I run it once so we can see that the result matches what the task expects.",
			"To solve this I define %s and keep its logic short: %s. " + edgeClaim,
			"how", // read from the code's lines, below
		}
		plan := plans[variant(task, len(plans))]
		how := explainDoc(code, strings.Trim(name, "`"), true)
		if plan == "how" && strings.HasPrefix(how, "How it works: ") {
			// code may hold "%": the text read from it is no format
			how = strings.TrimPrefix(how, "How it works: ")
			plan = "Here is how %s will work. " + strings.ReplaceAll(strings.ToUpper(how[:1])+how[1:], "%", "%%")
		} else if plan == "how" {
			plan = plans[0]
		}
		if plan == plans[1] && namedSteps(code, strings.Trim(name, "`")) < 2 {
			// no intermediate values to name: the plan says what the
			// lines do instead
			plan = "The plan: write %s so that %s, and it returns the result. Then I run it once so we can see that the result matches what the task expects."
		}
		if strings.Count(plan, "%s") > 1 {
			plan = fmt.Sprintf(plan, name, "it "+plainShape(code, name))
		} else {
			plan = fmt.Sprintf(plan, name)
		}
		if strings.HasPrefix(c.LastUser(), "Your answer could not be used: it says") && !p.bad(FalseEdgeClaim, c) {
			// Shown that its claim about empty input is false, it leaves
			// the claim out.
			plan = strings.TrimSuffix(plan, " "+edgeClaim)
		}
		if what := purpose(task, name); what != "" && !p.bad(StructureOnly, c) {
			// what the code is for, in the task's words, before how
			plan = what + " " + plan
		}
		return plan + "\n\n" + block(p.demo(task, code, c)) + "\n\n" + after(name, code, variant(task+"after", 3))
	case strings.HasPrefix(last, JudgedPrefix):
		// The run showed no error: the fix answers what the judge named,
		// and claims nothing of the output the reason does not.
		fix := fmt.Sprintf("The check names what is still wrong in %s, so this version changes that step and keeps the rest as it was.", name)
		if m := judgedLineRe.FindStringSubmatch(last); m != nil && strings.Contains(m[1], "not (") {
			fix = fmt.Sprintf("As the check says, `%s` negates the value %s computes. This version returns that value itself and keeps the rest as it was.", m[1], name)
		} else if m != nil {
			fix = fmt.Sprintf("As the check says, the line `%s` is where %s goes wrong. This version replaces it and keeps the rest as it was.", m[1], name)
		}
		return fix + "\n\n" + block(p.demo(task, good, c)) + "\n\n" + after(name, good, variant(last, 3))
	case strings.HasPrefix(last, "Execution result:") || strings.Contains(last, "is not correct"):
		fixes := []string{
			"The run shows %s does not give the expected result yet: the return value was computed from the wrong expression, so the check that compares it with the expected value fails. This version computes the value directly from the inputs.",
			"That output is wrong, so %s needs a fix: its final expression was inverted, which turns every true result into a false one and the other way round. Here it is with the expression the task asks for.",
			"The result does not match what the task asks; %s returned the opposite of the intended value because the last step negated it. The corrected version below drops that negation and keeps the rest unchanged.",
		}
		if !strings.Contains(last, " test") {
			// a run with no tests compared nothing: what it printed is
			// what shows the result wrong
			fixes[0] = "The printed value shows that %s does not give what the task asks for yet: the return value was computed from the wrong expression. This version computes the value directly from the inputs."
		}
		fix := fmt.Sprintf(fixes[variant(task+last, len(fixes))], name)
		if strings.Contains(last, "does not compile") || strings.Contains(last, "SyntaxError") {
			// A run that never started says nothing of the result.
			fix = fmt.Sprintf("The run stopped before anything ran: %s does not compile, and the SyntaxError points at one line. This version corrects that line and keeps the rest unchanged.", name)
		}
		return thanks + fix + "\n\n" + block(p.demo(task, good, c)) + "\n\n" + after(name, good, variant(last, 3))
	default: // feedback or a follow-up request
		if p.bad(UnchangedRevision, c) {
			return "You're right, thanks for pointing that out. The solution is correct.\n\n" + block(prevCode)
		}
		return p.revise(prevCode, task, last, name, feedbacks, c)
	}
}

// firstCheck names what checks a first answer: the task's example where
// it shows one, else the code's own example call.
func firstCheck(task string) string {
	if strings.Contains(task, "assert ") {
		return "The example in the task is its first check."
	}
	return "The call on an example at the end of the code is its first check."
}

// demo ends code with a print of the task's example call, as the writer
// prompt asks, unless the answer is silent.
func (p *Persona) demo(task, code string, c Call) string {
	if p.Demo == nil || p.bad(SilentCode, c) {
		return code
	}
	call, ok := p.Demo(task)
	if !ok {
		return code
	}
	return strings.TrimRight(code, "\n") + "\n\nprint(" + call + ")"
}

// catchAll reports a Solve that answers any text at all: it cannot tell a
// packed dialogue's next task from feedback, so every later request is
// answered as feedback.
func (p *Persona) catchAll() bool {
	_, _, ok := p.Solve("\x00 not a task \x00")
	return ok
}

// edgeClaim is the persona's unasked claim that its code handles empty
// input, true or not.
const edgeClaim = "Inputs at the edges, such as empty or single-element ones, go through the same path, so they need no special branch."

// after is the summary that follows an answer's code.
func after(name, code string, v int) string {
	forms := []string{
		"The run below shows what %s gives on the task's example.",
		"So %s %s.",
		"%s takes %s, in that order, as the call at the end of the code passes them.",
	}
	args := argNames(code, strings.Trim(name, "`"))
	_, called := exampleArgs(code, strings.Trim(name, "`"))
	switch {
	case v%len(forms) == 1 || v%len(forms) == 2 && (len(args) == 0 || !called):
		return fmt.Sprintf(forms[1], name, plainShape(code, name))
	case v%len(forms) == 2:
		return fmt.Sprintf(forms[2], name, strings.Join(mapArgs(args, func(a string) string { return "`" + a + "`" }), ", "))
	}
	return fmt.Sprintf(forms[0], name)
}

var assertRe = regexp.MustCompile("(?m)^assert .*$")

// revise answers feedback or a follow-up request: what the request asks
// for (tests, a companion function, comments, a note on speed or edge
// cases), always as a real change of the code.
func (p *Persona) revise(prevCode, task, request, name string, n int, c Call) string {
	bare := strings.Trim(name, "`")
	// What is asked is read without the function's name: `magic_square_test`
	// is not a request for tests.
	low := strings.ToLower(request)
	if bare != "" {
		low = strings.ReplaceAll(low, strings.ToLower(bare), "f")
	}
	switch {
	case strings.Contains(low, "test"):
		// The problem's tests beyond the statement's example, when the
		// persona knows them: the example has passed already.
		tests := assertRe.FindAllString(task, -1)
		if p.Tests != nil {
			if all := p.Tests(task); len(all) > len(tests) {
				tests = all
			}
		}
		code := strings.TrimRight(prevCode, "\n") + "\n\n# Tests of the behaviour the task asks for.\n"
		edge, why, hasEdge := edgeTest(prevCode, strings.Join(tests, "\n"), bare)
		if p.bad(TrivialTests, c) {
			tests, hasEdge = nil, false
			if bare != "the code" {
				code += fmt.Sprintf("assert callable(%s)\n", bare)
			}
		}
		for _, t := range tests {
			code += t + "\n"
		}
		text := fmt.Sprintf("I added a block of assert-based tests after %s. They check the task's example and further cases, and the run fails loudly if any of them stops holding, so the tests can stay next to the function.", name)
		switch {
		case hasEdge:
			code += "# Edge case: an empty input.\n" + strings.Join(edge, "\n") + "\n"
			text += fmt.Sprintf(" The edge case is an empty input: %s, which the last test checks.", why)
		case strings.Contains(low, "edge"):
			text += fmt.Sprintf(" I wrote no edge case: neither the task nor the lines of %s settle what it should give for an empty or unusual input, and a test that expects whatever it returns would check nothing.", name)
		}
		code += "print(\"tests passed\")"
		return text + "\n\n" + block(code) + "\n\nIf the run prints `tests passed`, every assertion held."
	case strings.Contains(low, "companion") || strings.Contains(low, "extend") || strings.Contains(low, "many inputs") || strings.Contains(low, "batch"):
		if bare == "the code" {
			break
		}
		return companionAnswer(prevCode, strings.Join(assertRe.FindAllString(task, -1), "\n"), name, bare, p.bad(UncalledClaim, c))
	}
	if m := probeRepairRe.FindStringSubmatch(c.LastUser()); m != nil && !p.bad(FalseEdgeClaim, c) {
		// Told that the code crashes on the empty argument the check
		// ran it with: raise a clear error for it instead.
		if i := emptyArg(m[2]); i >= 0 {
			if args := argNames(prevCode, m[1]); i < len(args) {
				check := []string{fmt.Sprintf("if len(%s) == 0:", args[i]), fmt.Sprintf("    raise ValueError(\"%s must not be empty\")", args[i])}
				return fmt.Sprintf("Empty input is now explicit: `%s` raises a ValueError that names the empty argument, instead of failing with an %s from deep inside the loop.", m[1], m[3]) +
					"\n\n" + block(addChecks(prevCode, m[1], check)) + "\n\nNon-empty inputs take the same path as before, so the earlier checks still pass."
			}
		}
	}
	// A docstring or an empty-input path goes on the function the
	// request names, where the code defines it (`f_all`, not `f`).
	if m := tickRe.FindStringSubmatch(request); m != nil && m[1] != bare && defines(prevCode, m[1]) && (asksEmpty(low) || asksGuard(low) || strings.Contains(low, "docstring") || strings.Contains(low, "comment") || strings.Contains(low, "explain") || strings.Contains(low, "document")) {
		bare, name = m[1], "`"+m[1]+"`"
	}
	if asksGuard(low) && !p.bad(ClaimedChecks, c) && bare != "the code" {
		// The types its example passes, from the code's own call or the
		// task's asserts.
		if text, ok := guardAnswer(prevCode, strings.Join(assertRe.FindAllString(task, -1), "\n"), name, bare); ok {
			return text
		}
		if args := argNames(prevCode, bare); len(args) > 0 {
			check := []string{"for name, value in (" + strings.Join(mapArgs(args, func(a string) string { return fmt.Sprintf("(%q, %s)", a, a) }), ", ") + ",):",
				"    if value is None:",
				"        raise TypeError(f\"{name} must not be None\")"}
			text := fmt.Sprintf("%s now checks its arguments before using them: passing None for any of them raises a TypeError that names the argument, instead of failing later with a less helpful error.", name)
			if strings.Contains(low, "type") {
				// no example shows the types: it says what it did not check
				text += " No example call shows which types it takes, so I did not guess them: any value other than None still goes through."
			}
			return text +
				"\n\n" + block(addChecks(prevCode, bare, check)) + "\n\nValid inputs take the same path as before, so the earlier checks still pass."
		}
	}
	if speed := gates.AsksForSpeed(low) && !strings.Contains(low, "memory") && bare != "the code"; speed && p.bad(FakeSpeedup, c) {
		if text, ok := fakeSpeedup(prevCode, name, bare); ok {
			return text
		}
	} else if speed || strings.Contains(low, "faster") {
		if text, ok := speedAnswer(prevCode, name, bare); ok {
			return text
		}
	}
	if !p.bad(OffRequestNoChange, c) {
		if text, ok := keepAnswer(low, prevCode, name, bare, p.bad(DeclinesMemory, c)); ok {
			if m := tickRe.FindStringSubmatch(request); m != nil && m[1] == bare+"_all" && defines(prevCode, m[1]) {
				// asked of the companion: its cost is the function's, case
				// by case, which the rest of the answer is about
				text = fmt.Sprintf("`%s` calls %s on each case of its list in turn, so its time and memory are those of %s on each case, added up; what follows is about %s. ", m[1], name, name, name) + text
			}
			if p.bad(ComputedOnceClaim, c) && strings.Contains(low, "recomput") {
				// the old reason, whatever the loop computes
				return fmt.Sprintf("No change is needed to avoid recomputing values: %s has no recursion and no nested loop, so each value it derives is computed once.", name) +
					"\n\n" + block(prevCode) + "\n\nThe code is the same as before, so the earlier checks still hold."
			}
			if p.bad(OnePassClaim, c) && strings.HasPrefix(text, "I leave") {
				// the old reason, true or not
				return fmt.Sprintf("No change is needed for larger inputs: %s makes a single pass over its input, so its time grows in step with the size of its input.", name) +
					"\n\n" + block(prevCode) + "\n\nThe code is the same as before, so the earlier checks still hold."
			}
			return text
		}
	}
	what, why := "a docstring that states what it computes", " No code change is needed for the rest: the code already does what the task asks, and the checks below show it."
	docs := []string{"Return the value the task describes for the given arguments.",
		"Compute the task's result from the arguments, without side effects.",
		"Return the task's result; the arguments are left unmodified."}
	doc := docs[n%len(docs)]
	switch {
	case strings.Contains(low, "faster") || strings.Contains(low, "memory") || strings.Contains(low, "optimi"):
		what = "a docstring on its cost"
		why = " No code change is needed for speed: it already makes a single pass over the input, so a faster version would have the same cost."
		doc = "Return the result in a single pass over the input."
	case asksEmpty(low) && !p.bad(DocOnlyEmpty, c) && !p.bad(FalseEdgeClaim, c) && bare != "the code":
		// Told what the code returned for empty input before, it makes
		// that value explicit (unless it raises whatever its lines give).
		was := ""
		if m := returnedRe.FindStringSubmatch(c.LastUser()); m != nil {
			was = m[1]
		}
		return emptyAnswer(prevCode, name, bare, was, p.bad(RaiseOnEmpty, c))
	case strings.Contains(low, "edge") || strings.Contains(low, "empty") || strings.Contains(low, "unusual"):
		what = "a docstring that states how it treats empty and unusual inputs"
		why = " No code change is needed for them: the same path already handles empty and single-element inputs."
		doc = "Return the result; empty and single-element inputs take the same path as any other."
	case !p.bad(VagueDocs, c) && (strings.Contains(low, "argument") || strings.Contains(low, "parameter")) &&
		(strings.Contains(low, "document") || strings.Contains(low, "docstring") || strings.Contains(low, "describe")):
		what, why = "a docstring that names each argument with its type", ""
		doc = "Compute the task's result.\n\n    Arguments:\n"
		for _, a := range argNames(prevCode, bare) {
			doc += fmt.Sprintf("        %s: an input the task describes (int, float or list, as in the example).\n", a)
		}
		doc += "    "
	case strings.Contains(low, "comment") || strings.Contains(low, "explain") || strings.Contains(low, "docstring"):
		how := !strings.Contains(low, "return")
		what, why = map[bool]string{true: "a docstring that explains how it works", false: "a docstring that says what it returns"}[how], ""
		doc = explainDoc(prevCode, bare, how)
		if p.bad(VagueDocs, c) {
			doc = []string{"Return the value the task describes, built step by step from the arguments.",
				"Build the result in steps: each intermediate value has a name, and the last one is returned."}[n%2]
		}
	}
	revised := addDocstring(prevCode, bare, doc)
	return fmt.Sprintf("I added to %s %s, as you asked.%s The logic is unchanged, so the results for valid inputs stay the same and the earlier checks still pass.", name, what, why) +
		"\n\n" + block(revised) + "\n\nThe run below shows the revised version still works."
}

// summaryNameRe reads the function the pipeline's closing request names.
var summaryNameRe = regexp.MustCompile("what the code \\(`([A-Za-z_]\\w*)`\\) does")

// closing replies to an accepted run in prose.
func (p *Persona) closing(request, code, task string, c Call) string {
	name := fnName(code)
	if p.bad(UncalledClaim, c) {
		// the last function defined, called or not
		return fmt.Sprintf("The output confirms that %s handles the request correctly, and the run finished without errors.", name)
	}
	// It names the last function the run called: a companion defined
	// after the example's call has shown nothing yet. With no call of its
	// own lines, the run is the tests', of the function the request names.
	if r := calledName(code); r != "" {
		name = r
	} else if m := summaryNameRe.FindStringSubmatch(request); m != nil {
		name = "`" + m[1] + "`"
	}
	if base := strings.TrimSuffix(strings.Trim(name, "`"), "_all"); base != strings.Trim(name, "`") && defines(code, base) && !strings.Contains(request, "nothing was printed") {
		// A companion: what the run shows of each function, not the
		// task's value claimed of a list of them.
		return fmt.Sprintf("The run shows both functions: `%s` gives the example's result, and %s, called on a list holding the example's arguments, returns a list holding that same result. Any other list of argument tuples goes through `%s` one tuple at a time, in order.", base, name, base)
	}
	shape := "It " + plainShape(code, name)
	if p.bad(OnePassClaim, c) {
		shape = "It works through its input once"
	}
	// It claims only what the request says the run showed, and of the
	// code only what its lines show.
	forms := []string{
		"The run confirms it: %s gives the expected result on the checks above. " + shape + ".",
		"Everything passes now: the output above shows %s on the cases that were checked, and larger inputs go through the same steps.",
		"That run is clean: %s produced the expected result without errors. " + shape + ".",
	}
	switch {
	case strings.Contains(request, "nothing was printed"):
		forms = []string{
			"The code ran without errors and printed nothing, because it only defines %s. Call it with your own arguments to get its result. " + shape + ".",
			"No errors: the run loads the code and defines %s, which hands back its result to the caller instead of printing it.",
		}
	case strings.Contains(request, "no tests ran"):
		forms = []string{
			"The output above is what %s computes for the arguments in the example call. " + shape + ".",
			"The printed value comes from calling %s on the example. " + shape + ".",
		}
	}
	text := fmt.Sprintf(forms[variant(task+request, len(forms))], name)
	if strings.Contains(request, "kept the code exactly as it was") {
		// nothing changed in this round: nothing passes "now"
		text = strings.Replace(text, "Everything passes now:", "Everything still passes, with the code as it was:", 1)
	}
	return text
}

var (
	agentTaskRe = regexp.MustCompile("(?s)Task: (.*?)\n\nAnswer with one ```([A-Za-z0-9_+-]+) block")
)

// agent plays an InterCode episode: a look around (the wrong first action)
// when there is one, then the gold action once the observation is back.
func (p *Persona) agent(c Call) string {
	msgs := c.Request.Messages
	if len(msgs) < 2 {
		return "I need a task."
	}
	m := agentTaskRe.FindStringSubmatch(msgs[1].Content)
	if m == nil || p.Act == nil {
		return "I cannot tell what the task is."
	}
	query, lang := strings.TrimSpace(m[1]), m[2]
	gold, first, ok := p.Act(query)
	if !ok {
		return "I cannot solve this task."
	}
	if p.bad(NoAction, c) {
		return "I would start by looking at how the data is laid out, then work out the exact command from what is there."
	}
	fence := func(code string) string { return "```" + lang + "\n" + strings.TrimSpace(code) + "\n```" }
	if c.AssistantTurns() == 0 && first != "" {
		looks := []string{
			"Before changing anything I want to see what is there.",
			"First a look at the data, so the real command fits it.",
			"Let me inspect the relevant part first.",
		}
		return looks[variant(query, len(looks))] + "\n\n" + fence(first)
	}
	if c.AssistantTurns() == 0 {
		return "This does it in one step.\n\n" + fence(gold)
	}
	nexts := []string{
		"Now that I have seen the output, this does what the task asks.",
		"With that in view, the command for the task itself:",
		"That shows what I needed; here is the action that solves it.",
	}
	return nexts[variant(query+c.LastUser(), len(nexts))] + "\n\n" + fence(gold)
}

// addDocstring puts a docstring under the top-level def of fn in code,
// or under the last one when code has no fn.
func addDocstring(code, fn, doc string) string {
	lines := strings.Split(code, "\n")
	at := -1
	for i, l := range lines {
		if isDef(l, fn) || !defines(code, fn) && strings.HasPrefix(l, "def ") {
			at = i
		}
	}
	if at < 0 {
		return "# " + doc + "\n" + code + "\nprint('revised')"
	}
	// the def may span lines; its body starts after the line ending in ':'
	for at < len(lines) && !strings.HasSuffix(strings.TrimSpace(lines[at]), ":") {
		at++
	}
	if at >= len(lines)-1 || strings.TrimSpace(lines[at+1]) == "" {
		// a one-line def: document the module instead
		return `"""` + doc + `"""` + "\n" + code
	}
	// the body's indentation is that of its first statement (comments
	// and blank lines may sit at any column)
	body := at + 1
	for body < len(lines)-1 && (strings.TrimSpace(lines[body]) == "" || strings.HasPrefix(strings.TrimSpace(lines[body]), "#")) {
		body++
	}
	indent := lines[body][:len(lines[body])-len(strings.TrimLeft(lines[body], " \t"))]
	if indent == "" {
		indent = "    "
	}
	out := append([]string{}, lines[:at+1]...)
	out = append(out, indent+`"""`+doc+`"""`)
	rest := lines[at+1:]
	if t := strings.TrimSpace(rest[0]); len(t) >= 6 && strings.HasPrefix(t, `"""`) && strings.HasSuffix(t, `"""`) {
		rest = rest[1:] // a one-line docstring already there is replaced, not stacked
	}
	return strings.Join(append(out, rest...), "\n")
}

// probeRepairRe reads the simulate stage's repair after its empty-input
// check: the function, its arguments and the error.
// tickRe: a name in backticks.
var tickRe = regexp.MustCompile("`([A-Za-z_]\\w*)`")

var probeRepairRe = regexp.MustCompile(`running ([A-Za-z_]\w*)\((.*)\) raises (\w+)`)

// emptyArg returns the index of the first empty literal (a list, string,
// tuple or dict) among a call's comma-separated arguments, or -1.
func emptyArg(args string) int {
	parts, _ := splitArgs(args)
	for i, a := range parts {
		switch strings.TrimSpace(a) {
		case "[]", "''", `""`, "()", "{}", "set()":
			return i
		}
	}
	return -1
}

// splitArgs cuts a call's arguments at the commas between them.
func splitArgs(args string) (parts, commas []string) {
	return splitTop(args, func(rest string) int {
		if rest[0] == ',' {
			return 1
		}
		return 0
	})
}

// splitTop cuts Python source s at the separators outside brackets and
// quotes: sep(rest) is the length of a separator at the start of rest, or
// 0. It returns the pieces between them and the separators.
func splitTop(s string, sep func(rest string) int) (parts, seps []string) {
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == '\\' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case depth == 0 && sep(s[i:]) > 0:
			// a separator may be a closing bracket (see closeParen)
			n := sep(s[i:])
			parts, seps = append(parts, s[start:i]), append(seps, s[i:i+n])
			start = i + n
			i += n - 1
		case strings.IndexByte("([{", c) >= 0:
			depth++
		case strings.IndexByte(")]}", c) >= 0:
			depth--
		}
	}
	return append(parts, s[start:]), seps
}

// addChecks puts lines at the start of the body of function fn (the last
// top-level def if code has no fn), after its docstring.
func addChecks(code, fn string, check []string) string {
	lines := strings.Split(code, "\n")
	at := -1
	for i, l := range lines {
		if isDef(l, fn) || at < 0 && strings.HasPrefix(l, "def ") {
			at = i
		}
	}
	if at < 0 {
		return code
	}
	for at < len(lines) && !strings.HasSuffix(strings.TrimSpace(lines[at]), ":") {
		at++
	}
	if at >= len(lines)-1 {
		return code
	}
	body := at + 1
	for body < len(lines)-1 && strings.TrimSpace(lines[body]) == "" {
		body++
	}
	indent := lines[body][:len(lines[body])-len(strings.TrimLeft(lines[body], " \t"))]
	if indent == "" {
		return code // a one-line def
	}
	if t := strings.TrimSpace(lines[body]); strings.HasPrefix(t, `"""`) {
		for len(t) < 6 || !strings.HasSuffix(t, `"""`) {
			if body++; body >= len(lines) {
				return code
			}
			t = strings.TrimSpace(lines[body])
		}
		body++
	}
	out := append([]string{}, lines[:body]...)
	for _, l := range check {
		out = append(out, indent+l)
	}
	return strings.Join(append(out, lines[body:]...), "\n")
}

func mapArgs(args []string, f func(string) string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = f(a)
	}
	return out
}

var identRe = regexp.MustCompile(`\b[a-z_][a-z0-9_]{2,}\b`)

// builtins are Python's built-in functions and types an explanation
// should not call the code's state.
var builtins = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields("abs all any bin bool chr dict divmod enumerate filter float frozenset hex int isinstance iter list map max min next oct ord pow reversed round set sorted str sum tuple type zip math heapq") {
		m[w] = true
	}
	return m
}()

// explain writes a preface for the reply in the request, naming its
// function and a few of its variables, in one of several phrasings.
func (p *Persona) explain(c Call) string {
	// The request holds the reply; a repair prompt after it does not.
	last := c.LastUser()
	for _, m := range c.Request.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "<reply>") {
			last = m.Content
		}
	}
	reply := last
	// a repair prompt follows the request: the reply is in the request
	for i := len(c.Request.Messages) - 1; i >= 0; i-- {
		if m := c.Request.Messages[i]; m.Role == "user" && strings.Contains(m.Content, "<reply>") {
			reply = m.Content
			break
		}
	}
	if i := strings.Index(reply, "<reply>"); i >= 0 {
		reply = reply[i:]
	}
	code := lastCode(reply)
	if p.bad(CodeForExplanation, c) {
		return "Good point. Here's the updated code:\n\n" + block(code)
	}
	if lang := lastFenceLang(reply); lang == "bash" || lang == "sh" || lang == "sql" {
		return explainCommand(lang, code, last)
	}
	failed := strings.Contains(last, "The run after this reply failed")
	name := fnName(code)
	if m := anyDefRe.FindStringSubmatch(code); name == "the code" && m != nil {
		name = "`" + m[1] + "`" // a def a planted indentation moved
	}
	var vars []string
	seen := map[string]bool{}
	for _, w := range identRe.FindAllString(code, -1) {
		// the function's own name and Python's builtins hold no state of it
		if !seen[w] && "`"+w+"`" != name && !builtins[w] && !strings.Contains("def return for while if else elif and not none true false print range len import from", w) {
			seen[w] = true
			vars = append(vars, "`"+w+"`")
		}
	}
	if len(vars) > 3 {
		vars = vars[:3]
	}
	detail := strings.Join(vars, ", ")
	// Each phrasing says only what the code's lines show: how it goes
	// over its input, and (from explainDoc) where its values start, what
	// its loops update and what it returns.
	shape := plainShape(code, name)
	how := ""
	if doc := explainDoc(code, strings.Trim(name, "`"), true); strings.HasPrefix(doc, "How it works: ") {
		how = strings.TrimPrefix(doc, "How it works: ")
		how = strings.ToUpper(how[:1]) + how[1:]
	}
	if detail == "" {
		detail = "its arguments"
	}
	// code may hold "%": the parts read from it are not format strings
	forms := []string{
		name + " " + shape + "; the answer is built from " + detail + " and returned.",
		name + " " + shape + ". " + how,
		how + " In short, " + name + " " + shape + ".",
		"The approach: " + name + " " + shape + ". " + how,
	}
	if how == "" {
		forms = forms[:1]
	}
	if failed && !p.bad(StructureOnly, c) {
		// Told that the run fails and a later turn fixes the code, it
		// says what the code is for and how it goes, not the lines that
		// the fix replaces.
		forms = []string{name + " " + shape + "."}
	}
	s := forms[variant(code+last, len(forms))]
	s = strings.ToUpper(s[:1]) + s[1:]
	if p.bad(StructureOnly, c) {
		return s
	}
	// What the code is for, in the task's words, and why its approach
	// gives the right answer, before how its lines go.
	if m := explainRequestRe.FindStringSubmatch(last); m != nil {
		if what := purpose(m[1], name); what != "" && failed {
			s = strings.TrimSpace(what + " " + s)
		} else if what != "" {
			s = strings.TrimSpace(what + " " + s + " " + why(code, strings.Trim(name, "`")))
		}
	}
	return s
}

// anyDefRe: a def at any indentation.
var anyDefRe = regexp.MustCompile(`(?m)^\s*def\s+([A-Za-z_]\w*)`)

// explainRequestRe reads the request a reply answers from the explain
// prompt.
var explainRequestRe = regexp.MustCompile("(?s)The user's latest request:\n\n(.*?)\n\nThe assistant's reply")

// taskVerbRe: "Write a (python) function to find ..." or "... that finds ...".
var taskVerbRe = regexp.MustCompile(`(?i)\bfunction\s+(to|that)\s+([a-z]+)\b([^.\n]*)`)

// purpose says what name computes in the task's words ("`min_cost`
// finds the minimum cost path to reach (m, n) ..."), or "" when the
// request states no "function to ..." of its own.
func purpose(request, name string) string {
	if name == "the code" {
		name = "The function" // code with no definition the persona can read
	}
	m := taskVerbRe.FindStringSubmatch(request)
	if m == nil {
		// "Write a function of recursion list sum.", "Implement an LRU
		// cache ...": the task's own sentence, as the task states it
		if first := taskSentence(request); strings.HasPrefix(first, "write ") {
			return name + " does what the task states: " + first
		} else if first != "" {
			return name + " is written for the task: " + first
		}
		return ""
	}
	verb := strings.ToLower(m[2])
	if strings.EqualFold(m[1], "to") {
		switch {
		case strings.HasSuffix(verb, "y") && len(verb) > 2 && !strings.ContainsRune("aeiou", rune(verb[len(verb)-2])):
			verb = verb[:len(verb)-1] + "ies"
		case strings.HasSuffix(verb, "s"), strings.HasSuffix(verb, "sh"), strings.HasSuffix(verb, "ch"), strings.HasSuffix(verb, "x"), strings.HasSuffix(verb, "z"):
			verb += "es"
		default:
			verb += "s"
		}
	}
	return name + " " + verb + strings.TrimRight(m[3], " :;,") + "."
}

var dpStepAnyRe = regexp.MustCompile(`([A-Za-z_]\w*)\[[^\]=]*\](?:\[[^\]=]*\])?\s*=.*\b([A-Za-z_]\w*)\[[^\]]*-\s*1`)

// why says why fn's approach gives the right answer, after an account of
// how it goes, where its lines show an approach with a reason of its own:
// a recursion, a table built from its own earlier entries; "" otherwise.
func why(code, fn string) string {
	lines, defined := ownLines(code, fn)
	if !defined {
		return ""
	}
	body := strings.Join(lines, "\n")
	if p := gates.CountPasses("def " + fn + "():\n" + body); p.Recursive {
		return "That works because each call hands itself a smaller case, and the cases it answers directly end the chain."
	}
	for _, l := range lines {
		if m := dpStepAnyRe.FindStringSubmatch(l); m != nil && m[1] == m[2] {
			return fmt.Sprintf("That works because each entry of `%s` is built from entries already filled in, so every smaller case is settled before a larger one needs it and the last entry holds the answer.", m[1])
		}
	}
	return ""
}

var (
	fenceLangRe = regexp.MustCompile("(?s)```([A-Za-z0-9_+-]*)\n.*?```")
	// the first word of each pipeline stage: the commands a line runs
	cmdWordRe = regexp.MustCompile(`(?:^|[|;&(]\s*)([a-z][a-z0-9_.-]*)`)
	// the tables a query reads
	tableRe = regexp.MustCompile(`(?i)\b(?:FROM|JOIN)\s+([A-Za-z_][A-Za-z0-9_]*)`)
)

// lastFenceLang is the language tag of the last fenced block in s.
func lastFenceLang(s string) string {
	m := fenceLangRe.FindAllStringSubmatch(s, -1)
	if len(m) == 0 {
		return ""
	}
	return strings.ToLower(m[len(m)-1][1])
}

// taskSentence is the first sentence of a request, lowered, when it
// states a task of four words or more ("" otherwise).
func taskSentence(request string) string {
	first := strings.TrimSpace(strings.SplitN(strings.SplitN(strings.TrimSpace(request), "\n", 2)[0], ". ", 2)[0])
	if len(strings.Fields(first)) < 4 {
		return ""
	}
	return strings.ToLower(first[:1]) + strings.TrimRight(first[1:], ".") + "."
}

// explainCommand prefaces a shell command or a SQL query as such (not as a
// Python function): what the task asks of it, in the task's words, then
// the commands it runs or the tables it reads. Told that the run fails
// and a later turn fixes it, it names no command: the fix may drop them.
func explainCommand(lang, code, key string) string {
	task := ""
	if m := explainRequestRe.FindStringSubmatch(key); m != nil {
		if t := taskSentence(m[1]); t != "" {
			task = "The task: " + t + " "
		}
	}
	if strings.Contains(key, "The run after this reply failed") {
		if task == "" {
			return "This is a first attempt; its run shows what still has to change."
		}
		return task + "This is a first attempt at it; its run shows what still has to change."
	}
	return task + commandParts(lang, code, key)
}

// commandParts says which commands a shell line runs, or which tables a
// query reads.
func commandParts(lang, code, key string) string {
	// The first absolute path the command names: what it works on.
	where := "the paths the task names"
	for _, f := range strings.Fields(code) {
		if f = strings.Trim(f, `'"`); strings.HasPrefix(f, "/") && len(f) > 1 {
			where = "`" + f + "`"
			break
		}
	}
	re, forms := cmdWordRe, []string{
		"The command runs %s on " + where + "; what it prints, or the files it changes, is the answer.",
		"One line of shell does it: %s on " + where + ", each stage working on what the one before it produced.",
		"This uses %s on " + where + " and touches nothing else.",
	}
	if lang == "sql" {
		re, forms = tableRe, []string{
			"The query reads %s and returns only the rows and columns the question asks about.",
			"This selects from %s; its conditions and ordering are the question's.",
			"Reading %s is enough here: the query keeps the rows the question describes and nothing else.",
		}
	}
	var words []string
	seen := map[string]bool{}
	for _, m := range re.FindAllStringSubmatch(code, -1) {
		if w := strings.ToLower(m[1]); !seen[w] && len(words) < 3 {
			seen[w] = true
			words = append(words, "`"+m[1]+"`")
		}
	}
	if len(words) == 0 {
		words = []string{"the tools at hand"}
	}
	return fmt.Sprintf(forms[variant(code+key, len(forms))], strings.Join(words, ", "))
}

// promptPart returns the text after marker up to the next fence or blank
// line pair.
func promptPart(s, marker string) string {
	i := strings.Index(s, marker)
	if i < 0 {
		return ""
	}
	rest := s[i+len(marker):]
	if j := strings.Index(rest, "\n\nCode:"); j >= 0 {
		rest = rest[:j]
	}
	return strings.TrimSpace(rest)
}

// judge says whether the code in the request is the persona's good code.
func (p *Persona) judge(c Call) string {
	if p.bad(YesJudge, c) {
		return `{"correct": true, "reason": "The code ran and looks right."}`
	}
	if p.bad(UnparseableJSON, c) {
		return `My verdict: {correct: probably, reason: "it seems fine"`
	}
	last := firstUser(c)
	task := promptPart(last, "Task:\n")
	code := codeAfter(last, "Code:\n")
	good, _, ok := "", "", false
	if p.Solve != nil {
		good, _, ok = p.Solve(task)
	}
	// the argument checks revise adds guard the code; they change no result
	code = personaTypesRe.ReplaceAllString(personaEmptyRe.ReplaceAllString(personaChecksRe.ReplaceAllString(code, ""), ""), "")
	code = unSpeed(code) // its own speed-ups change no result
	correct := ok && normalize(code) == normalize(good)
	if stored, _, _, changed := storeRepeated(good, strings.Trim(fnName(good), "`")); ok && changed && strings.Contains(normalize(code), normalize(stored)) {
		correct = true // the change it makes itself when asked not to recompute
	}
	if less, _, changed := lessMemory(good, strings.Trim(fnName(good), "`")); ok && changed && strings.Contains(normalize(code), normalize(less)) {
		correct = true // the change it makes itself when asked for less memory
	}
	if ok && !correct && strings.Contains(normalize(code), normalize(good)) {
		correct = true
	}
	if !correct && p.bad(NoReasonJudge, c) {
		return `{"correct": false, "reason": "The code is not correct."}`
	}
	b, _ := json.Marshal(map[string]any{"correct": correct, "reason": judgeReason(correct, code, good, last)})
	return string(b)
}

// judgeReason says why the judge decided as it did, from what it can
// see: the value the run printed, or the line where the code parts from
// a correct one.
func judgeReason(correct bool, code, good, prompt string) string {
	name := fnName(good)
	if correct {
		if out := lastLine(codeAfter(prompt, "Real output of the run:")); out != "" {
			return fmt.Sprintf("%s prints `%s` for the example call, and its lines compute what the task asks for.", name, out)
		}
		return fmt.Sprintf("The lines of %s compute what the task asks for.", name)
	}
	line := differingLine(code, good)
	switch {
	case line == "":
		return fmt.Sprintf("%s does not compute what the task asks for: its steps are not the ones the task needs.", name)
	case strings.Contains(line, "not ("):
		return fmt.Sprintf("The line `%s` of %s puts `not` in front of the value it computes, so %s returns the negation of the result the task asks for.", strings.TrimSpace(line), name, name)
	}
	return fmt.Sprintf("The line `%s` of %s does not compute what the task asks for.", strings.TrimSpace(line), name)
}

// judgedLineRe reads the line a judge's reason names.
var judgedLineRe = regexp.MustCompile("[Tt]he line `([^`]+)`")

// lastLine is the last non-blank line of s, or "".
func lastLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(ls[len(ls)-1])
}

// differingLine is the first line of code (normalized) that good does not
// have, or "".
func differingLine(code, good string) string {
	have := map[string]bool{}
	for _, l := range strings.Split(normalize(good), "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, l := range strings.Split(normalize(code), "\n") {
		if t := strings.TrimSpace(l); t != "" && !have[t] && !strings.HasPrefix(t, "print(") {
			return t
		}
	}
	return ""
}

var personaChecksRe = regexp.MustCompile(`(?m)^[ \t]*for name, value in \(.*\):\n[ \t]*if value is None:\n[ \t]*raise TypeError\(f"\{name\} must not be None"\)\n`)

// personaTypesRe: the type checks guardAnswer adds.
var personaTypesRe = regexp.MustCompile(`(?m)^[ \t]*if not isinstance\(\w+, [\w()\[\]{}"'.,\s]+\):\n[ \t]*raise TypeError\(f"\w+ must be [^"]*"\)\n`)

var personaEmptyRe = regexp.MustCompile(`(?m)^[ \t]*if len\(\w+\) == 0:\n[ \t]*(raise ValueError\("\w+ (is empty: \w+ has no result for it|must not be empty)"\)|return .*)\n`)

// normalize drops docstrings, comments and blank lines, so a documented
// revision judges like the code it documents.
func normalize(code string) string {
	var out []string
	for _, l := range strings.Split(code, "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "#") || (strings.HasPrefix(t, `"""`) && strings.HasSuffix(t, `"""`) && len(t) >= 6) {
			continue
		}
		out = append(out, strings.TrimRight(l, " "))
	}
	return strings.Join(out, "\n")
}

var (
	aimRe  = regexp.MustCompile(`Aim your feedback at this goal: ([a-z _]+)\.`)
	asks   = map[string]string{"syntax": "use a clearer layout for the condition in %s", "efficiency": "avoid recomputing values inside %s", "functionality": "make %s handle an empty input explicitly", "clarity": "add a docstring to %s that says what it returns", "bugs": "guard %s against inputs of the wrong type", "security": "validate the arguments %s receives before using them", "compatibility": "avoid features in %s that older Python versions lack", "resource use": "keep the memory %s uses small for long inputs", "scalability": "make sure %s still works quickly on much larger inputs", "best practices": "document the arguments of %s and their types"}
	others = []string{"clarity", "efficiency", "security", "bugs"}
)

// category is the category (or kind) a JSON answer names: the one asked
// for, or, misbehaving with WrongCategory, the first of others that is not.
func (p *Persona) category(c Call, asked string, others []string) string {
	if p.bad(WrongCategory, c) {
		for _, o := range others {
			if o != asked {
				return o
			}
		}
	}
	return asked
}

// showCode is text, with code after it when the answer misbehaves with
// CodeInFeedback (the user writes the change instead of asking for it).
func (p *Persona) showCode(c Call, text, lead, code string) string {
	if p.bad(CodeInFeedback, c) {
		return text + " " + lead + "\n```python\n" + code + "\n```"
	}
	return text
}

// feedback plays the demanding user: JSON with the category asked for, the
// goals met and missed (under the names real models used), and a request
// for one change in words.
func (p *Persona) feedback(c Call) string {
	last := firstUser(c)
	cat := "clarity"
	if m := aimRe.FindStringSubmatch(last); m != nil {
		cat = m[1]
	}
	code := codeAfter(last, "The assistant's latest code:")
	name := fnName(code)
	ask, ok := asks[cat]
	if !ok {
		ask = "improve %s"
	}
	openers := []string{"The code works, but please %s.", "Could you %s?", "One thing I'd like changed: %s.", "Before I use this, %s, please.", "It passes, though I want you to %s."}
	text := fmt.Sprintf(openers[variant(last, len(openers))], fmt.Sprintf(ask, name))
	said := p.category(c, cat, others)
	text = p.showCode(c, text, "Like this:", code)
	if p.bad(UnparseableJSON, c) {
		return "Feedback (" + said + "): " + text + " {unmet: [" + said + "]"
	}
	b, _ := json.Marshal(map[string]any{
		"category": said, "achieved_goals": []string{"functionality"}, "unmet_goals": []string{said}, "feedback": text})
	return string(b)
}

var (
	kindRe   = regexp.MustCompile(`Make the follow-up of this kind: ([a-z_]+),`)
	fuAsks   = map[string]string{"extend": "Could you extend this with a companion function that applies %s to many inputs at once?", "optimize": "Can you make %s faster or lighter on memory for very large inputs, keeping the same results?", "tests": "Please add a few tests for %s, including an edge case, that run together with it.", "explain": "Could you explain in comments or a docstring how %s works and why?", "edge_cases": "How does %s handle unusual inputs such as empty ones? Please make that behaviour explicit."}
	fuOthers = []string{"tests", "explain", "extend"}
)

// followup plays the user who asks for more: JSON with the kind asked for
// and a request in words.
func (p *Persona) followup(c Call) string {
	last := firstUser(c)
	kind := "tests"
	if m := kindRe.FindStringSubmatch(last); m != nil {
		kind = m[1]
	}
	code := codeAfter(last, "The assistant's latest code:")
	ask, ok := fuAsks[kind]
	if !ok {
		ask = "Could you improve %s?"
	}
	text := fmt.Sprintf(ask, fnName(code))
	said := p.category(c, kind, fuOthers)
	text = p.showCode(c, text, "For example:", code)
	if p.bad(UnparseableJSON, c) {
		return "Follow-up (" + said + "): " + text + " {kind: " + said
	}
	b, _ := json.Marshal(map[string]any{"kind": said, "request": text})
	return string(b)
}

// evalFeedback plays the user of `eval` who says what is wrong in words.
func (p *Persona) evalFeedback(c Call) string {
	last := c.LastUser()
	code := codeAfter(last, "The assistant's code:")
	text := fmt.Sprintf("The tests fail because %s returns the wrong value for the example cases. Check the expression it returns against the task statement.", fnName(code))
	if p.bad(CodeInFeedback, c) {
		good := code
		if p.Solve != nil {
			if g, _, ok := p.Solve(promptPart(last, "Task:\n")); ok {
				good = g
			}
		}
		text = "Here is the fixed code:\n```python\n" + good + "\n```"
	}
	return text
}

var defArgsRe = regexp.MustCompile(`(?m)^\s*def\s+([A-Za-z_]\w*)\s*\(([^)]*)\)`)

// argNames are the parameter names of function name in code (the last
// function when code has no such one).
func argNames(code, name string) []string {
	ms := defArgsRe.FindAllStringSubmatch(code, -1)
	if len(ms) == 0 {
		return nil
	}
	params := ms[len(ms)-1][2]
	for _, m := range ms {
		if m[1] == name {
			params = m[2]
		}
	}
	var out []string
	for _, a := range strings.Split(params, ",") {
		a = strings.TrimLeft(strings.TrimSpace(a), "*")
		if i := strings.IndexAny(a, ":= "); i >= 0 {
			a = a[:i]
		}
		if a != "" && a != "self" {
			out = append(out, a)
		}
	}
	return out
}
