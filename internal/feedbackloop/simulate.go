// Package feedbackloop builds Code-Feedback style dialogues grounded in real
// execution: the writer model explains its plan and writes code, the code
// runs in the sandbox (a notebook-like session, or the problem's tests
// through the harness), the real output becomes the next turn, and the model
// analyses and fixes until a judge accepts the code or the iteration limit
// is reached; the writer then replies to the accepted run in prose. The
// judge is the problem's tests where it has them, else a judge model that
// answers in JSON. A query that asks for another language is answered in
// it, run when the sandbox has its runner, else labelled not executable.
//
// After the first accepted answer, a model playing the user asks follow-up
// requests (extend, optimise, add tests, explain, handle edge cases) and
// gives feedback aimed at one category per round (schema.FeedbackCategories),
// with or without the canonical solution in view (oracle); each is answered
// with code that runs again. Every model answer passes a gate, with repairs
// that restate the exact answer form; a round that still fails is dropped
// and counted (Result.Checks), the rest of the dialogue kept.
//
// Every model call goes through an llm.Chatter, whose cache makes an
// interrupted dialogue resume by replaying the earlier turns. Nothing in an
// execution turn is invented: it is the run's own stdout, stderr and
// traceback (cut with visible markers) or the harness's test report, and
// the turn carries its schema.Execution record.
package feedbackloop

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// Turn is one user request of a task. Problem, when it has tests, makes the
// tests the judge of this turn's code.
type Turn struct {
	Text    string // the user's message as shown in the dialogue
	Problem *schema.Problem
}

// Task is what one dialogue is built from: one query or problem (one turn)
// or a packed dialogue (several related requests answered in order, in one
// sandbox session).
type Task struct {
	ID       string // stable id of the source (query, problem or dialogue id)
	Sources  []string
	Language string // "" = Options.Language
	Turns    []Turn
	// Solution is the canonical solution the oracle feedback variant shows
	// (the last turn's problem solution); "" disables the oracle variant.
	Solution string
}

// resultOutcome names a cell's outcome.
func resultOutcome(res executors.Result) string {
	switch {
	case res.TimedOut:
		return "timeout"
	case res.OOM:
		return "oom"
	case res.OK():
		return "ok"
	case res.Exception != "":
		return res.Exception
	}
	return "error"
}

// RenderResult is the text of an execution turn for a cell: its stdout,
// then its stderr (the traceback), each cut to keep at most chars bytes
// (head and tail, with a marker saying how much was cut), and a line for a
// SilentRun is the execution turn of a clean run that printed nothing.
const SilentRun = "[the code ran without printing anything]"

// timeout. Everything shown is the run's own output.
func RenderResult(res executors.Result, timeout time.Duration, chars int) string {
	var b strings.Builder
	if s := strings.TrimRight(res.Stdout, "\n"); s != "" {
		b.WriteString(trimMiddle(s, chars))
		if res.StdoutTruncated {
			b.WriteString("\n[... output cut by the sandbox's output limit ...]")
		}
		b.WriteString("\n")
	}
	if s := strings.TrimRight(res.Stderr, "\n"); s != "" {
		b.WriteString(trimMiddle(s, chars))
		b.WriteString("\n")
	}
	if res.TimedOut {
		fmt.Fprintf(&b, "Execution timed out after %s.\n", timeout)
	}
	if b.Len() == 0 {
		if res.OK() {
			return SilentRun
		}
		fmt.Fprintf(&b, "[no output; exit status %d]\n", res.ExitCode)
	}
	return strings.TrimRight(b.String(), "\n")
}

// trimMiddle keeps the first and last parts of s on line boundaries when it
// is longer than n bytes: a traceback's end holds the error, its start the
// context.
func trimMiddle(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := s[:n/2], s[len(s)-n/2:]
	if i := strings.LastIndexByte(head, '\n'); i > n/4 {
		head = head[:i]
	}
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < n/4 {
		tail = tail[i+1:]
	}
	return fmt.Sprintf("%s\n[... %d bytes cut ...]\n%s", head, len(s)-len(head)-len(tail), tail)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// parseFeedback reads the feedback model's JSON whatever it called the
// fields: "met"/"achieved_goals"/"goals_met"/..., "missed"/"unmet_goals"/...,
// "feedback"/"message"/..., "category"/"goal"/...; lists may be a string.
func parseFeedback(text string) (feedbackAnswer, error) {
	var raw map[string]any
	if err := parse.JSON(text, &raw); err != nil {
		return feedbackAnswer{}, err
	}
	norm := map[string]any{}
	for k, v := range raw {
		norm[strings.ToLower(strings.NewReplacer("-", "_", " ", "_").Replace(k))] = v
	}
	get := func(keys ...string) any {
		for _, k := range keys {
			if v, ok := norm[k]; ok && v != nil {
				return v
			}
		}
		return nil
	}
	a := feedbackAnswer{
		Category: asString(get("category", "goal", "aimed_at", "aim", "focus", "feedback_category", "target_goal")),
		Met:      asList(get("met", "achieved_goals", "achieved", "goals_met", "met_goals", "goals_achieved", "strengths")),
		Missed:   asList(get("missed", "unmet_goals", "unmet", "missed_goals", "goals_missed", "goals_unmet", "not_met", "weaknesses")),
		Feedback: strings.TrimSpace(asString(get("feedback", "message", "feedback_message", "comment", "text", "response"))),
	}
	if a.Feedback == "" {
		return a, errors.New(`the JSON has no "feedback" text`)
	}
	return a, nil
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		return strings.Join(asList(x), "; ")
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func asList(v any) []string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if strings.TrimSpace(x) == "" {
			return nil
		}
		var out []string
		for _, p := range strings.Split(x, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			if s := strings.TrimSpace(asString(e)); s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return []string{fmt.Sprint(v)}
}

// canonicalCategory maps a category as a model writes it ("Best
// practices", "resource-use") to schema.FeedbackCategories, or "".
func canonicalCategory(s string) string {
	k := strings.ToLower(strings.TrimSpace(s))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	for _, c := range schema.FeedbackCategories {
		if k == c {
			return c
		}
	}
	return ""
}
