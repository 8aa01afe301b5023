// Package schema holds the records every stage reads and writes, their stable
// ids, and the streaming readers and writers for JSONL and Parquet. No other
// package knows file formats.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Roles of a dialogue message. RoleExecution carries real sandbox output; how
// it is rendered (a user turn with an output block, or a tool turn) is an
// export-time choice.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleExecution = "execution"
)

// Query is one single-turn coding question from an input pool.
type Query struct {
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Language string            `json:"language,omitempty"`
	Source   string            `json:"source,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	// Extra holds source fields no schema field took, verbatim, so an import
	// loses nothing (EvalPlus base_input/plus_input/atol, LeetCode meta, ...).
	// A source field whose mapped value would not reproduce the original JSON
	// (an integer task_id, a test string held in Tests) is kept here as well.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Problem is a query with something that can judge an answer: a reference
// solution and tests (MBPP, HumanEval, LeetCode).
type Problem struct {
	Query
	Solution   string   `json:"solution,omitempty"`
	Tests      []string `json:"tests,omitempty"`       // assert-style lines (MBPP) or one check() block (HumanEval)
	TestImport string   `json:"test_import,omitempty"` // imports the tests need
	Setup      string   `json:"setup,omitempty"`       // code run before the solution
	EntryPoint string   `json:"entry_point,omitempty"`
	Prompt     string   `json:"prompt,omitempty"` // HumanEval-style signature + docstring
}

// Message is one turn. Exec holds the execution record behind an execution
// turn (and optionally the code run for an assistant turn).
type Message struct {
	Role     string     `json:"role"`
	Content  string     `json:"content"`
	Exec     *Execution `json:"exec,omitempty"`
	Feedback *Feedback  `json:"feedback,omitempty"`
}

// Dialogue is a multi-turn conversation produced by a stage.
type Dialogue struct {
	ID       string            `json:"id"`
	Messages []Message         `json:"messages"`
	Stage    string            `json:"stage,omitempty"`
	Method   string            `json:"method,omitempty"` // e.g. "mutation", "execution-feedback", "human-feedback"
	Model    string            `json:"model,omitempty"`
	Prompt   string            `json:"prompt_version,omitempty"`
	Sources  []string          `json:"sources,omitempty"` // ids of the queries/problems it was built from
	Labels   map[string]string `json:"labels,omitempty"`  // e.g. "final_status": "pass", "mutation_op": "swap_compare"
	// SourceID is the id exactly as the imported file spelled it when that was
	// not a JSON string (Code-Feedback uses integers); the Code-Feedback export
	// writes it back so a round trip keeps the original representation.
	SourceID json.RawMessage `json:"source_id,omitempty"`
	// Extra holds top-level fields of an imported dialogue that no schema
	// field took, verbatim.
	Extra map[string]json.RawMessage `json:"extra,omitempty"`
}

// Execution is the record of one sandbox run, enough to re-run and audit it.
// Code is the code the turn ran: the assistant's own code, also when a test
// judge ran it (then Judge names the judge and holds the tests, and the
// judge program is rebuilt from them rather than stored).
type Execution struct {
	Language   string        `json:"language"`
	Code       string        `json:"code"`
	Judge      *JudgeRef     `json:"judge,omitempty"`
	Driver     string        `json:"driver"`
	Image      string        `json:"image,omitempty"`
	TimeoutMS  int64         `json:"timeout_ms,omitempty"`
	MemoryB    int64         `json:"memory_bytes,omitempty"`
	ExitCode   int           `json:"exit_code"`
	TimedOut   bool          `json:"timed_out,omitempty"`
	TimeLimit  string        `json:"time_limit,omitempty"` // which limit a timed-out run passed: "cpu" or "wall"
	OOM        bool          `json:"oom,omitempty"`
	Exception  string        `json:"exception,omitempty"` // Python exception type, e.g. NameError
	ErrorLine  string        `json:"error_line,omitempty"`
	Stdout     string        `json:"stdout,omitempty"`
	Stderr     string        `json:"stderr,omitempty"`
	Passed     *bool         `json:"passed,omitempty"` // tests verdict where tests ran
	Duration   time.Duration `json:"duration_ns"`
	ExecutedAt time.Time     `json:"executed_at,omitempty"`
}

// JudgeRef is a test judge by reference: which harness at which version
// built the program (SHA256 of its source, so a rebuild can be checked),
// what it judged the code against, and the verdict's shown part, from
// which the execution turn's text renders again.
type JudgeRef struct {
	Harness string `json:"harness"`
	Version string `json:"version"`
	SHA256  string `json:"sha256"` // first 32 hex digits of the program's SHA-256
	// What the program is built from besides the code. Zero options are the
	// judge's defaults.
	Tests       []string `json:"tests"`
	Setup       string   `json:"setup,omitempty"`
	TestImport  string   `json:"test_import,omitempty"`
	EntryPoint  string   `json:"entry_point,omitempty"`
	Prompt      string   `json:"prompt,omitempty"`
	CaseTimeout float64  `json:"case_timeout_s,omitempty"`
	ValueChars  int      `json:"value_chars,omitempty"`
	StdoutBytes int      `json:"stdout_bytes,omitempty"`
	Failures    int      `json:"feedback_failures,omitempty"` // failing cases the text shows in full
	// The verdict as far as the text shows it. The load failure's and the
	// first shown case's exception and message are the record's Exception
	// and ErrorLine and are not repeated here.
	Total       int         `json:"total"`
	PassedCount int         `json:"passed_count"`
	Incomplete  bool        `json:"incomplete,omitempty"` // the judge never reported its end
	RunTimedOut bool        `json:"run_timed_out,omitempty"`
	StdoutTotal int64       `json:"stdout_total,omitempty"`
	Load        *JudgeCase  `json:"load,omitempty"`
	Shown       []JudgeCase `json:"shown,omitempty"` // the failing (and not-run) cases the text shows
	// NotRun counts the cases that never started: the run ended during an
	// earlier one. They are neither passed nor failed.
	NotRun int `json:"not_run,omitempty"`
}

// JudgeCase is one failing test case (or the load failure, with Stage) of a
// judge verdict.
type JudgeCase struct {
	Stage     string `json:"stage,omitempty"`
	Test      string `json:"test,omitempty"`
	Kind      string `json:"kind"`
	Exception string `json:"exception,omitempty"`
	Message   string `json:"message,omitempty"`
	Traceback string `json:"traceback,omitempty"`
	Line      int    `json:"line,omitempty"`
	Input     string `json:"input,omitempty"`
	Expected  string `json:"expected,omitempty"`
	Actual    string `json:"actual,omitempty"`
	Op        string `json:"op,omitempty"`
	NotRun    bool   `json:"not_run,omitempty"` // listed as not run, see JudgeRef.NotRun
}

// Rating is a difficulty score for a query from one rubric.
type Rating struct {
	QueryID string `json:"query_id"`
	Rubric  string `json:"rubric"`
	Score   int    `json:"score"` // 1-5; 0 means unrated
	Reason  string `json:"reason,omitempty"`
	Model   string `json:"model,omitempty"`
	Raw     string `json:"raw,omitempty"` // the model's answer when it could not be parsed
}

// Feedback categories for simulated human feedback.
var FeedbackCategories = []string{
	"syntax", "efficiency", "functionality", "clarity", "bugs",
	"security", "compatibility", "resource_use", "scalability", "best_practices",
}

// Feedback is a human-style feedback turn's structured form.
type Feedback struct {
	Category string          `json:"category"`
	Oracle   bool            `json:"oracle,omitempty"` // canonical solution was visible
	Body     json.RawMessage `json:"body,omitempty"`
}

// Finding is one leakage audit hit.
type Finding struct {
	DialogueID string  `json:"dialogue_id"`
	Benchmark  string  `json:"benchmark"`
	TaskID     string  `json:"task_id,omitempty"`
	Method     string  `json:"method"` // "lines", "ngram", "embedding"
	Score      float64 `json:"score"`
	Evidence   string  `json:"evidence,omitempty"`
	// Spans locate the matched text in the dialogue, when the method knows it.
	Spans []Span `json:"spans,omitempty"`
}

// Span is bytes [Start, End) of the dialogue's message Message (from 0).
type Span struct {
	Message int `json:"message"`
	Start   int `json:"start"`
	End     int `json:"end"`
}

// StableID derives an id from content: the same parts give the same id.
func StableID(prefix string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return prefix + "-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// NormalizeText folds whitespace and case, for exact-duplicate detection.
func NormalizeText(s string) string {
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// Validate reports the first missing required field of a query: id and text.
func (q *Query) Validate() error {
	switch {
	case q.ID == "":
		return errors.New("missing required field id")
	case strings.TrimSpace(q.Text) == "":
		return errors.New("missing required field text")
	}
	return nil
}

// Validate reports the first missing required field of a problem: id, text,
// and at least one of solution or tests (a problem must be judgeable).
func (p *Problem) Validate() error {
	if err := p.Query.Validate(); err != nil {
		return err
	}
	if p.Solution == "" && len(p.Tests) == 0 {
		return errors.New("missing required field: solution or tests")
	}
	return nil
}

// Validate reports the first structural problem of a dialogue: an empty id,
// no messages, or a message with an unknown role.
func (d *Dialogue) Validate() error {
	if d.ID == "" {
		return errors.New("missing required field id")
	}
	if len(d.Messages) == 0 {
		return errors.New("missing required field messages")
	}
	for i, m := range d.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleExecution:
		case "":
			return fmt.Errorf("message %d: missing required field role", i)
		default:
			return fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return nil
}

// DialogueID is the stable id of a dialogue: a hash of its roles and
// contents, so re-running a stage on the same conversation gives the same id.
func DialogueID(msgs []Message) string {
	parts := make([]string, 0, 2*len(msgs))
	for _, m := range msgs {
		parts = append(parts, m.Role, m.Content)
	}
	return StableID("dlg", parts...)
}

// QueryID is the stable id of a query made from text alone (sources with no
// id of their own, such as Code Alpaca): the normalized text decides it.
func QueryID(source, text string) string {
	return StableID(source, NormalizeText(text))
}

// Program is the runnable reference program of a problem: Prompt + Solution
// for HumanEval-style problems whose solution is only a function body
// (HumanEval, EvalPlus, LeetCodeDataset), else Solution itself (MBPP).
func (p *Problem) Program() string {
	if p.Prompt != "" && !strings.HasPrefix(p.Solution, p.Prompt) {
		return p.Prompt + p.Solution
	}
	return p.Solution
}
