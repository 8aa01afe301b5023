package verify

import (
	"regexp"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// step is one execution as a trainer reads it: an execution turn, the
// assistant turn before it and the code that turn shows, with the record
// the native layout carries beside the text.
type step struct {
	turn int // the execution turn
	asst int // the assistant turn whose code ran; -1 when none precedes
	text string
	rec  *schema.Execution
	// code is the visible code that ran: for a record, the block equal to
	// the record's code; else the block the stages run (parse.Code's rule:
	// the first block of the language, else the first unlabelled one).
	code string
	lang executors.Language
	// alts are the turn's other blocks that may be the one that ran: the
	// last block of the language when it is not code (a tool call's code,
	// as Code-Feedback and the openai-tools layout place it). Only for
	// turns without a record, which names the code itself.
	alts []string
	// judged: the result is a test verdict (a judge record, or a text in
	// the words of harness.Feedback).
	judged bool
	// codeDiffers: the turn shows no block equal to the code its record ran.
	codeDiffers bool
	// why, when set, says why the step cannot be re-run.
	why string
}

// Reasons an execution cannot be re-run.
const (
	whyNoAssistant = "the execution turn does not follow an assistant turn"
	whyNoCode      = "the execution result follows a turn without runnable code (the code was run through a tool call the file does not hold)"
	whyNoTests     = "the result is a verdict of tests the visible text does not show"
	whyNoExecution = "the code has no execution turn after it (nothing recorded to compare)"
)

// isJudgeVerdictText reports whether an execution text is in the words of
// harness.Feedback: a test verdict, or a load failure the judge reported.
func isJudgeVerdictText(text string) bool {
	return testsVerdictRe.MatchString(text) || setupFailRe.MatchString(text) ||
		compileFailRe.MatchString(text) || loadFailRe.MatchString(text)
}

// steps lists d's executions in order, and the assistant turns with code
// and no execution after them.
func steps(d *schema.Dialogue) []step {
	var out []step
	for i, m := range d.Messages {
		if isExecution(m) {
			st := step{turn: i, asst: -1, text: resultText(m), rec: m.Exec}
			if i > 0 && d.Messages[i-1].Role == schema.RoleAssistant {
				st.asst = i - 1
			}
			plan(d, &st)
			out = append(out, st)
			continue
		}
		if m.Role == schema.RoleAssistant && (i+1 == len(d.Messages) || !isExecution(d.Messages[i+1])) {
			// Code shown as run (the stages' own pick) with no result after
			// it: a turn-split sample cut before its execution, or a
			// dialogue that never ran it.
			if _, ok := pickBlock(m.Content, "python"); ok && endsWithCode(m.Content) {
				out = append(out, step{turn: i, asst: i, why: whyNoExecution})
			}
		}
	}
	return out
}

// endsWithCode: the turn's last paragraph is a code block, the shape of a
// turn that hands code to be run (a closing remark quoting code is not).
func endsWithCode(text string) bool {
	return strings.HasSuffix(strings.TrimRight(text, " \n"), "```")
}

// plan fills in what the step runs.
func plan(d *schema.Dialogue, st *step) {
	if st.asst < 0 {
		st.why = whyNoAssistant
		return
	}
	content := d.Messages[st.asst].Content
	if e := st.rec; e != nil {
		st.judged = e.Passed != nil
		st.lang = executors.Language(e.Language)
		if st.lang == "" {
			st.lang = executors.Python
		}
		if e.Code != "" {
			code, ok := recordBlock(content, e)
			st.code, st.codeDiffers = code, !ok
			return
		}
	} else {
		st.judged = isJudgeVerdictText(st.text)
		st.lang = executors.Python
		if st.judged {
			if t := requestTests(d, st.asst); t != nil && t.lang != "" {
				st.lang = executors.Language(t.lang)
			}
		}
	}
	b, ok := pickBlock(content, string(st.lang))
	if !ok {
		st.why = whyNoCode
		return
	}
	st.code = b
	if last, ok := lastBlock(content, string(st.lang)); ok && last != b {
		st.alts = []string{last}
	}
}

// lastBlock is the last closed, non-empty block of lang of a turn.
func lastBlock(text, lang string) (string, bool) {
	lang = parse.NormLang(lang)
	blocks := parse.CodeBlocks(text)
	for i := len(blocks) - 1; i >= 0; i-- {
		if b := blocks[i]; !b.Unclosed && b.Lang == lang && strings.TrimSpace(b.Code) != "" {
			return b.Code, true
		}
	}
	return "", false
}

// pickBlock is the block the stages run of an assistant turn
// (parse.Code's rule): the first closed, non-empty block of lang, else the
// first unlabelled one.
func pickBlock(text, lang string) (string, bool) {
	lang = parse.NormLang(lang)
	blocks := parse.CodeBlocks(text)
	for _, b := range blocks {
		if !b.Unclosed && b.Lang == lang && strings.TrimSpace(b.Code) != "" {
			return b.Code, true
		}
	}
	for _, b := range blocks {
		if !b.Unclosed && b.Lang == "" && strings.TrimSpace(b.Code) != "" {
			return b.Code, true
		}
	}
	return "", false
}

// recordBlock finds the block of an assistant turn that is the code its
// record ran, and returns the record's code (byte-exact, so a judge program
// rebuilds to its hash). ok is false when the turn shows no such block: the
// visible code is not what ran.
func recordBlock(text string, e *schema.Execution) (string, bool) {
	want := strings.TrimSpace(e.Code)
	old := strings.HasPrefix(e.Code, "# codefeedback test judge") // an older record stored the judge program itself
	for _, b := range parse.CodeBlocks(text) {
		got := strings.TrimSpace(b.Code)
		if b.Unclosed || got == "" {
			continue
		}
		if got == want || (old && strings.Contains(e.Code, got)) {
			return e.Code, true
		}
	}
	return e.Code, false
}

// visibleTests are the tests a request shows ("Your code should pass these
// tests:" and a fenced block, as the stages write them).
type visibleTests struct {
	turn int // the user turn showing them
	lang string
	src  string
	// Filled in by the preparation run (Python: one test per top-level
	// statement, leading imports apart; other languages: one per line).
	imports string
	tests   []string
	err     string // the block does not parse
}

var testsLeadRe = regexp.MustCompile(`Your code should pass (?:these tests|tests like this one):`)

// requestTests returns the tests shown by the nearest user request before
// turn asst that shows any, or nil.
func requestTests(d *schema.Dialogue, asst int) *visibleTests {
	for k := asst - 1; k >= 0; k-- {
		m := d.Messages[k]
		if m.Role != schema.RoleUser || isExecution(m) {
			continue
		}
		loc := testsLeadRe.FindStringIndex(m.Content)
		if loc == nil {
			continue
		}
		for _, b := range parse.CodeBlocks(m.Content[loc[1]:]) {
			if b.Unclosed || strings.TrimSpace(b.Code) == "" {
				continue
			}
			return &visibleTests{turn: k, lang: langOr(b.Lang, "python"), src: b.Code}
		}
	}
	return nil
}

func langOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Limits an execution text names: a whole run's timeout ("Execution timed
// out after 2s."), a test's ("Test timed out (timed out after 2s)").
var (
	runTimeoutRe  = regexp.MustCompile(`(?m)^Execution timed out after ([0-9][0-9.hmsuµn]*)\.$`)
	caseTimeoutRe = regexp.MustCompile(`(?m)^Test timed out \(timed out after ([0-9][0-9.hmsuµn]*)\)|(?m)^Execution timed out after ([0-9][0-9.hmsuµn]*) while running `)
)

// textLimits returns the run and case timeouts an execution text shows (0
// for those it does not).
func textLimits(text string) (run, cs time.Duration) {
	if m := runTimeoutRe.FindStringSubmatch(text); m != nil {
		run, _ = time.ParseDuration(m[1])
	}
	if m := caseTimeoutRe.FindStringSubmatch(text); m != nil {
		cs, _ = time.ParseDuration(m[1] + m[2])
	}
	return run, cs
}
