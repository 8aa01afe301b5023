// Package schema holds the records every stage reads and writes, their stable
// ids, and the streaming readers and writers for JSONL and Parquet. No other
// package knows file formats.
package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
}

// Execution is the record of one sandbox run, enough to re-run and audit it.
type Execution struct {
	Language   string        `json:"language"`
	Code       string        `json:"code"`
	Driver     string        `json:"driver"`
	Image      string        `json:"image,omitempty"`
	TimeoutMS  int64         `json:"timeout_ms,omitempty"`
	MemoryB    int64         `json:"memory_bytes,omitempty"`
	ExitCode   int           `json:"exit_code"`
	TimedOut   bool          `json:"timed_out,omitempty"`
	OOM        bool          `json:"oom,omitempty"`
	Exception  string        `json:"exception,omitempty"` // Python exception type, e.g. NameError
	ErrorLine  string        `json:"error_line,omitempty"`
	Stdout     string        `json:"stdout,omitempty"`
	Stderr     string        `json:"stderr,omitempty"`
	Passed     *bool         `json:"passed,omitempty"` // tests verdict where tests ran
	Duration   time.Duration `json:"duration_ns"`
	ExecutedAt time.Time     `json:"executed_at,omitempty"`
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
