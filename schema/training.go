package schema

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
)

// Training layouts: what preference and RL trainers load, mined from the
// test verdicts a dialogue's execution records hold. Every record keeps the
// native execution turn(s) behind it, so verify re-runs them.
const (
	// ExportDPO is TRL's preference type (DPO, ORPO, CPO, reward
	// modelling): prompt, chosen, rejected. Chosen passed the problem's
	// tests, rejected failed them, in the same context.
	ExportDPO ExportFormat = "dpo"
	// ExportKTO is TRL's unpaired preference type (KTO, BCO): prompt,
	// completion, label; one record per judged attempt.
	ExportKTO ExportFormat = "kto"
	// ExportRL is verl's RL record (data_source, prompt as chat messages,
	// ability, reward_model {style "rule", ground_truth}, extra_info),
	// which TRL's GRPO trainer also loads: prompt, plus the other columns
	// handed to reward functions. ground_truth is the body `serve`'s
	// /submit takes, minus the code.
	ExportRL ExportFormat = "rl"
)

// TrainingFormats lists the training layouts, for flags and help texts.
var TrainingFormats = []ExportFormat{ExportDPO, ExportKTO, ExportRL}

// Training reports whether f is a training layout (records mined from
// verdicts rather than one sample per dialogue).
func (f ExportFormat) Training() bool { return f == ExportDPO || f == ExportKTO || f == ExportRL }

// Style chooses how prompts and completions of the training layouts are
// written: TRL's "conversational" (lists of {role, content}) or "standard"
// (plain strings).
type Style string

const (
	StyleConversational Style = "conversational"
	StyleStandard       Style = "standard"
)

// Skip reasons the training layouts count (ExportStats.Skipped).
const (
	SkipNoFailure      = "no failed attempt with a recorded error"
	SkipNoPass         = "failed attempt with no later pass against the same tests"
	SkipWhitespace     = "chosen and rejected code differ only in whitespace"
	SkipLayout         = "failed turn shows no code block equal to the code that ran"
	SkipNoJudge        = "no test verdict (nothing judged against tests)"
	SkipUnpassed       = "problem never passed (its tests are not known to be satisfiable)"
	SkipDuplicateTests = "problem already written (same prompt and tests)"
)

// attempt is an assistant turn whose code a test judge ran: the turn, its
// execution turn and the record.
type attempt struct {
	asst, exec int
	rec        *Execution
}

// judgedAttempts lists d's attempts judged against real tests (a judge
// with at least one test and a verdict).
func judgedAttempts(d *Dialogue) []attempt {
	var out []attempt
	for i := 1; i < len(d.Messages); i++ {
		m := &d.Messages[i]
		if m.Role != RoleExecution || m.Exec == nil || m.Exec.Judge == nil || m.Exec.Passed == nil || m.Exec.Judge.Total == 0 {
			continue
		}
		if d.Messages[i-1].Role != RoleAssistant {
			continue
		}
		out = append(out, attempt{asst: i - 1, exec: i, rec: m.Exec})
	}
	return out
}

// passed: every test ran and passed.
func (a attempt) passed() bool {
	j := a.rec.Judge
	return *a.rec.Passed && !j.Incomplete && j.PassedCount == j.Total && j.NotRun == 0
}

// failure is the recorded error of a failed attempt, "" when the record
// holds none (then it is no evidence of failing).
func (a attempt) failure() string {
	if *a.rec.Passed {
		return ""
	}
	e, j := a.rec, a.rec.Judge
	var parts []string
	switch {
	case e.TimedOut || j.RunTimedOut:
		parts = append(parts, "timeout")
	case e.OOM:
		parts = append(parts, "out of memory")
	}
	if e.Exception != "" || e.ErrorLine != "" {
		parts = append(parts, strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(e.Exception+": "+e.ErrorLine), ": "), ":"))
	}
	if e.ErrorLine == "" && len(j.Shown) > 0 && j.Shown[0].Input != "" { // a wrong answer: what the test saw
		c := j.Shown[0]
		parts = append(parts, fmt.Sprintf("%s expected %s, got %s", c.Input, c.Expected, c.Actual))
	}
	if len(parts) == 0 && (j.Load != nil || len(j.Shown) > 0) {
		parts = append(parts, "tests failed")
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%d of %d tests passed)", strings.Join(parts, "; "), j.PassedCount, j.Total)
}

// problemKey identifies what an attempt was judged against.
func problemKey(e *Execution) string {
	j := e.Judge
	b, _ := json.Marshal([]any{cmp.Or(e.Language, "python"), j.Tests, j.Setup, j.TestImport, j.EntryPoint, j.Prompt})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:8])
}

// replaceCode returns text with the fenced block holding code replaced by
// repl, keeping the fence lines; ok is false when no block holds code.
func replaceCode(text, code, repl string) (string, bool) {
	want := strings.TrimSpace(code)
	for _, f := range fences(text) {
		if !f.Closed || strings.TrimSpace(f.Code) != want {
			continue
		}
		open := text[f.Start : f.Start+strings.IndexByte(text[f.Start:], '\n')+1]
		closeLine := "```"
		if strings.HasSuffix(text[:f.End], "\n") {
			closeLine += "\n"
		}
		return text[:f.Start] + open + strings.TrimRight(repl, "\n") + "\n" + closeLine + text[f.End:], true
	}
	return text, false
}

// sameBarWhitespace reports whether two programs differ only in whitespace.
func sameBarWhitespace(a, b string) bool {
	strip := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v' {
				return -1
			}
			return r
		}, s)
	}
	return strip(a) == strip(b)
}

// contextOf is d's messages before turn k in the Code-Feedback layout's
// terms (system folded into the first user turn, executions as user turns
// starting ExecutionPrefix): what the trainer's prompt is.
func contextOf(d *Dialogue, k int) []ChatMessage {
	return ToCodeFeedback(&Dialogue{ID: d.ID, Messages: d.Messages[:k]}).Messages
}

// PairRecord is one preference pair. Prompt, Chosen and Rejected are
// []ChatMessage (conversational) or string (standard). The execution
// columns hold the native execution turn (JSON of a Message with its
// record) behind each side, as strings so that Arrow-based loaders see one
// type per column; verify re-runs them.
type PairRecord struct {
	ID                string `json:"id"`
	Prompt            any    `json:"prompt"`
	Chosen            any    `json:"chosen"`
	Rejected          any    `json:"rejected"`
	RejectedError     string `json:"rejected_error"`
	ChosenExecution   string `json:"chosen_execution"`
	RejectedExecution string `json:"rejected_execution"`
	DialogueID        string `json:"dialogue_id"`
}

// UnpairedRecord is one KTO record: a judged attempt, label true when it
// passed its tests.
type UnpairedRecord struct {
	ID         string `json:"id"`
	Prompt     any    `json:"prompt"`
	Completion any    `json:"completion"`
	Label      bool   `json:"label"`
	Error      string `json:"error,omitempty"`
	Execution  string `json:"execution"`
	DialogueID string `json:"dialogue_id"`
}

// RLRecord is verl's RL record (and a TRL GRPO row).
type RLRecord struct {
	DataSource  string   `json:"data_source"`
	Prompt      any      `json:"prompt"`
	Ability     string   `json:"ability"`
	RewardModel RLReward `json:"reward_model"`
	ExtraInfo   RLExtra  `json:"extra_info"`
}

// RLReward is verl's reward_model column: style "rule" and the ground
// truth, a JSON string of GroundTruth.
type RLReward struct {
	Style       string `json:"style" parquet:"style"`
	GroundTruth string `json:"ground_truth" parquet:"ground_truth"`
}

// RLExtra is the extra_info column: verl's split and index, and what ties
// the record to its dialogue and proves its tests satisfiable (a reference
// solution and the execution turn that passed them).
type RLExtra struct {
	Split              string `json:"split" parquet:"split"`
	Index              int64  `json:"index" parquet:"index"`
	ID                 string `json:"id" parquet:"id"`
	DialogueID         string `json:"dialogue_id" parquet:"dialogue_id"`
	Language           string `json:"language" parquet:"language"`
	Tests              int64  `json:"tests" parquet:"tests"`
	Reference          string `json:"reference" parquet:"reference"`
	ReferenceExecution string `json:"reference_execution" parquet:"reference_execution"`
}

// GroundTruth is what a reward function needs to judge a completion in
// this sandbox: the tests and how the judge builds its program. POSTed
// with "code" (or "completion") added, it is a /submit request of `serve`.
type GroundTruth struct {
	Language    string   `json:"language"`
	Tests       []string `json:"tests"`
	EntryPoint  string   `json:"entry_point,omitempty"`
	Setup       string   `json:"setup,omitempty"`
	TestImport  string   `json:"test_import,omitempty"`
	Prompt      string   `json:"prompt,omitempty"` // HumanEval-style: the completion continues it
	TimeoutS    float64  `json:"timeout_s,omitempty"`
	CaseTimeout float64  `json:"case_timeout_s,omitempty"`
	MemoryMB    int64    `json:"memory_mb,omitempty"`
}

// GroundTruthOf is the ground truth an execution record was judged by.
func GroundTruthOf(e *Execution) GroundTruth {
	j := e.Judge
	return GroundTruth{Language: cmp.Or(e.Language, "python"), Tests: j.Tests, EntryPoint: j.EntryPoint, Setup: j.Setup,
		TestImport: j.TestImport, Prompt: j.Prompt, TimeoutS: float64(e.TimeoutMS) / 1000, CaseTimeout: j.CaseTimeout, MemoryMB: e.MemoryB >> 20}
}

func execJSON(m *Message) string {
	b, err := json.Marshal(m)
	if err != nil { // a Message always marshals
		panic(err)
	}
	return string(b)
}

// styled renders a context and a completion in style s.
func styled(s Style, ctx []ChatMessage, completion string) (prompt, comp any) {
	if s == StyleStandard {
		parts := make([]string, len(ctx))
		for i, m := range ctx {
			parts[i] = m.Content
		}
		return strings.Join(parts, "\n\n"), completion
	}
	return ctx, []ChatMessage{{Role: RoleAssistant, Content: completion}}
}

// trainingMiner turns dialogues into training records and counts what it
// skipped and why.
type trainingMiner struct {
	style   Style
	skipped map[string]int
	// RL: problems already written, and the next index.
	seen  map[string]bool
	index int64
	// Dialogues with a failed attempt, and how many yielded a pair.
	withFailure, paired int
}

func newTrainingMiner(s Style) *trainingMiner {
	return &trainingMiner{style: s, skipped: map[string]int{}, seen: map[string]bool{}}
}

// onJudged gives mine each dialogue's judged attempts; a dialogue with
// none is counted as skipped and yields nothing: every export mines
// judged attempts only.
func onJudged[R any](tm *trainingMiner, mine func(d *Dialogue, atts []attempt) []R) func(*Dialogue) []R {
	return func(d *Dialogue) []R {
		atts := judgedAttempts(d)
		if len(atts) == 0 {
			tm.skipped[SkipNoJudge]++
			return nil
		}
		return mine(d, atts)
	}
}

// pairs mines d's preference pairs from its judged attempts atts: each
// failed attempt (with its error recorded) against the first later attempt
// that passed the same tests.
// The chosen side is the failed turn with its code replaced by the code
// that passed, so both sides answer the same context in the same words
// and differ in the code alone (the passing turn's own words answer the
// error message, which the pair's prompt does not show).
func (tm *trainingMiner) pairs(d *Dialogue, atts []attempt) []PairRecord {
	var out []PairRecord
	failed := false
	for i, a := range atts {
		if a.passed() {
			continue
		}
		why := a.failure()
		if why == "" {
			tm.skipped[SkipNoFailure]++
			continue
		}
		failed = true
		var win *attempt
		for _, b := range atts[i+1:] {
			if b.passed() && problemKey(b.rec) == problemKey(a.rec) {
				win = &b
				break
			}
		}
		if win == nil {
			tm.skipped[SkipNoPass]++
			continue
		}
		if sameBarWhitespace(a.rec.Code, win.rec.Code) {
			tm.skipped[SkipWhitespace]++
			continue
		}
		rejected := d.Messages[a.asst].Content
		chosen, ok := replaceCode(rejected, a.rec.Code, win.rec.Code)
		if !ok {
			tm.skipped[SkipLayout]++
			continue
		}
		prompt, c := styled(tm.style, contextOf(d, a.asst), chosen)
		_, r := styled(tm.style, nil, rejected)
		out = append(out, PairRecord{
			ID: fmt.Sprintf("%s#%d", d.ID, a.asst), Prompt: prompt, Chosen: c, Rejected: r, RejectedError: why,
			ChosenExecution: execJSON(&d.Messages[win.exec]), RejectedExecution: execJSON(&d.Messages[a.exec]), DialogueID: d.ID,
		})
	}
	if failed {
		tm.withFailure++
		if len(out) > 0 {
			tm.paired++
		}
	} else {
		tm.skipped[SkipNoFailure]++
	}
	return out
}

// unpaired mines one KTO record per judged attempt: label true when it
// passed, false when it failed with its error recorded.
func (tm *trainingMiner) unpaired(d *Dialogue, atts []attempt) []UnpairedRecord {
	var out []UnpairedRecord
	for _, a := range atts {
		why := a.failure()
		if !a.passed() && why == "" {
			tm.skipped[SkipNoFailure]++
			continue
		}
		prompt, c := styled(tm.style, contextOf(d, a.asst), d.Messages[a.asst].Content)
		out = append(out, UnpairedRecord{ID: fmt.Sprintf("%s#%d", d.ID, a.asst), Prompt: prompt, Completion: c, Label: a.passed(),
			Error: why, Execution: execJSON(&d.Messages[a.exec]), DialogueID: d.ID})
	}
	return out
}

// rl mines one RL record per problem (prompt and tests) that some attempt
// of d passed: the prompt is the context of the first attempt at it, the
// reference is the passing code.
func (tm *trainingMiner) rl(d *Dialogue, atts []attempt) []RLRecord {
	var out []RLRecord
	first := map[string]int{} // problem -> assistant turn of its first attempt
	passed := map[string]bool{}
	for _, a := range atts {
		k := problemKey(a.rec)
		if _, ok := first[k]; !ok {
			first[k] = a.asst
		}
		if !a.passed() {
			continue
		}
		ctx := contextOf(d, first[k])
		ctxJSON, _ := json.Marshal(ctx)
		h := sha256.Sum256(ctxJSON)
		key := k + "/" + hex.EncodeToString(h[:8])
		passed[k] = true
		if tm.seen[key] {
			tm.skipped[SkipDuplicateTests]++
			continue
		}
		tm.seen[key] = true
		gt, err := json.Marshal(GroundTruthOf(a.rec))
		if err != nil {
			panic(err)
		}
		prompt, _ := styled(tm.style, ctx, "")
		out = append(out, RLRecord{
			DataSource: "codefeedback/" + cmp.Or(d.Stage, "dialogues"), Prompt: prompt, Ability: "code",
			RewardModel: RLReward{Style: "rule", GroundTruth: string(gt)},
			ExtraInfo: RLExtra{Split: "train", Index: tm.index, ID: fmt.Sprintf("%s#%d", d.ID, first[k]), DialogueID: d.ID,
				Language: cmp.Or(a.rec.Language, "python"), Tests: int64(len(a.rec.Judge.Tests)), Reference: a.rec.Code,
				ReferenceExecution: execJSON(&d.Messages[a.exec])},
		})
		tm.index++
	}
	for k := range first {
		if !passed[k] {
			tm.skipped[SkipUnpassed]++
		}
	}
	return out
}
