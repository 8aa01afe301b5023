package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ExportFormat names an export layout after what loads it. The container
// (JSONL or Parquet) follows the output file's extension.
type ExportFormat string

const (
	// ExportCodeFeedback is the layout of Code-Feedback on the Hub and the
	// default: {"id", "messages": [{role, content}]} with user and assistant
	// turns only; an execution is a user turn starting "Execution result:";
	// a system turn is folded into the first user turn. The id is the
	// source's own (an integer for Code-Feedback) where the input had one.
	ExportCodeFeedback ExportFormat = "codefeedback"
	// ExportParquet is the Code-Feedback layout in a Parquet file (the name
	// older pipeline files use).
	ExportParquet ExportFormat = "parquet"
	// ExportNative is every field of the records, execution turns with their
	// records included: what verify re-runs and import reads back losslessly.
	ExportNative ExportFormat = "native"
	// ExportShareGPT is LLaMA-Factory's sharegpt layout
	// {"id", "conversations": [{from, value}], "system"}; a dataset_info.json
	// entry naming the file is written beside it.
	ExportShareGPT ExportFormat = "sharegpt"
	// ExportOpenAI is OpenAI chat fine-tuning {"messages": [...]}; executions
	// are user turns.
	ExportOpenAI ExportFormat = "openai"
	// ExportOpenAITools is OpenAI chat fine-tuning with tool calls: the
	// assistant calls execute_code with its own code and language, the
	// output is the tool's answer, and every line carries the tools list.
	ExportOpenAITools ExportFormat = "openai-tools"
)

// ExportFormats lists the layouts, for flags and help texts.
var ExportFormats = []ExportFormat{ExportCodeFeedback, ExportNative, ExportShareGPT, ExportOpenAI, ExportOpenAITools}

// ExecAs chooses how RoleExecution turns are rendered where a format has a
// choice: as a user turn holding an output block, or as a tool turn
// (OpenAI "tool" answering an assistant tool call, ShareGPT "observation").
type ExecAs string

const (
	ExecAsUser ExecAs = "user"
	ExecAsTool ExecAs = "tool"
)

// Split chooses what one sample is.
type Split string

const (
	// SplitDialogue: one sample per dialogue, every assistant turn trained.
	SplitDialogue Split = "dialogue"
	// SplitTurns: one sample per assistant turn, holding that turn and
	// everything before it (id "<id>#<k>", k counting assistant turns from
	// 1). In the OpenAI layouts the earlier assistant turns carry weight 0,
	// so each sample trains on its last turn only.
	SplitTurns Split = "turns"
	// SplitWeights (OpenAI layouts only): one sample per dialogue in which
	// every assistant turn but the last carries weight 0.
	SplitWeights Split = "weights"
)

// ExecutionPrefix starts an execution turn rendered as a user turn; it is
// how Code-Feedback itself writes execution output.
const ExecutionPrefix = "Execution result: \n"

// ToCodeFeedback renders a dialogue in the Code-Feedback layout. The id is
// the original representation (SourceID) when the dialogue was imported
// with a non-string id, else the string id. Execution turns become user
// turns with ExecutionPrefix; a system turn is folded into the next user
// turn (Code-Feedback has none).
func ToCodeFeedback(d *Dialogue) CodeFeedbackRecord {
	id := d.SourceID
	if len(id) == 0 {
		id, _ = json.Marshal(d.ID)
	}
	r := CodeFeedbackRecord{ID: id, Messages: make([]ChatMessage, 0, len(d.Messages))}
	system := ""
	for _, m := range d.Messages {
		switch m.Role {
		case RoleSystem:
			system += m.Content + "\n\n"
		case RoleExecution:
			r.Messages = append(r.Messages, ChatMessage{Role: RoleUser, Content: ExecutionPrefix + m.Content})
		case RoleUser:
			r.Messages = append(r.Messages, ChatMessage{Role: RoleUser, Content: system + m.Content})
			system = ""
		default:
			r.Messages = append(r.Messages, ChatMessage{Role: m.Role, Content: m.Content})
		}
	}
	return r
}

// ShareGPTRecord is the ShareGPT layout (LLaMA-Factory, FastChat, Axolotl).
type ShareGPTRecord struct {
	ID            string         `json:"id"`
	Conversations []ShareGPTTurn `json:"conversations"`
	System        string         `json:"system,omitempty"`
}

// ShareGPTTurn is one ShareGPT turn: from is human, gpt, system or observation.
type ShareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// ToShareGPT renders a dialogue as ShareGPT. A leading system turn goes to
// the system column (LLaMA-Factory reads it there); execution turns are
// "human" turns with the output block, or "observation" turns with
// ExecAsTool: both sit where LLaMA-Factory expects the user's side.
func ToShareGPT(d *Dialogue, as ExecAs) ShareGPTRecord {
	r := ShareGPTRecord{ID: d.ID, Conversations: make([]ShareGPTTurn, 0, len(d.Messages))}
	for _, m := range d.Messages {
		t := ShareGPTTurn{Value: m.Content}
		switch m.Role {
		case RoleSystem:
			r.System += m.Content
			continue
		case RoleAssistant:
			t.From = "gpt"
		case RoleExecution:
			if as == ExecAsTool {
				t.From = "observation"
			} else {
				t.From, t.Value = "human", ExecutionPrefix+m.Content
			}
		default:
			t.From = "human"
		}
		r.Conversations = append(r.Conversations, t)
	}
	return r
}

// OpenAIRecord is one line of an OpenAI chat fine-tuning file.
type OpenAIRecord struct {
	Messages []OpenAIMessage `json:"messages"`
	Tools    []OpenAITool    `json:"tools,omitempty"`
}

// OpenAIMessage is a chat message of the fine-tuning format. Weight (0 or
// 1, assistant turns only) says whether the turn is trained on.
type OpenAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
	Weight     *int             `json:"weight,omitempty"`
}

// OpenAIToolCall is an assistant's call of the code execution tool.
type OpenAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// OpenAITool is a tool definition of the fine-tuning format.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction describes a callable function with a JSON Schema.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ExecuteToolName is the function name execution tool calls use.
const ExecuteToolName = "execute_code"

// ExecuteTool is the definition of execute_code every tool-call line carries.
var ExecuteTool = OpenAITool{Type: "function", Function: OpenAIFunction{
	Name:        ExecuteToolName,
	Description: "Run code in a sandbox and return its output (stdout, stderr, the traceback of an error, or the verdict of the task's tests).",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"language":{"type":"string","description":"programming language of the code, e.g. python"},` +
		`"code":{"type":"string","description":"the complete program or cell to run"}},` +
		`"required":["language","code"],"additionalProperties":false}`),
}}

// ToOpenAI renders a dialogue for OpenAI chat fine-tuning. With ExecAsTool
// an execution turn that follows an assistant turn becomes a "tool" message
// answering an execute_code call added to that assistant message; the call
// carries the code the assistant wrote (the fenced block it ran is moved
// from the text into the call) and its language, and the line carries the
// tools list. Otherwise an execution is a user turn with the output block.
func ToOpenAI(d *Dialogue, as ExecAs) OpenAIRecord {
	r := OpenAIRecord{Messages: make([]OpenAIMessage, 0, len(d.Messages))}
	calls := 0
	for _, m := range d.Messages {
		content := m.Content
		msg := OpenAIMessage{Role: m.Role, Content: &content}
		if m.Role == RoleExecution {
			last := len(r.Messages) - 1
			if as == ExecAsTool && last >= 0 && r.Messages[last].Role == RoleAssistant {
				calls++
				id := "call_" + strconv.Itoa(calls)
				prev := r.Messages[last]
				lang, code, rest := toolCode(*prev.Content, m.Exec)
				args, _ := json.Marshal(struct {
					Language string `json:"language"`
					Code     string `json:"code"`
				}{lang, code})
				var tc OpenAIToolCall
				tc.ID, tc.Type = id, "function"
				tc.Function.Name, tc.Function.Arguments = ExecuteToolName, string(args)
				prev.ToolCalls = append(prev.ToolCalls, tc)
				prev.Content = nil
				if strings.TrimSpace(rest) != "" {
					prev.Content = &rest
				}
				r.Messages[last] = prev
				msg = OpenAIMessage{Role: "tool", Content: &content, ToolCallID: id}
			} else {
				c := ExecutionPrefix + m.Content
				msg = OpenAIMessage{Role: RoleUser, Content: &c}
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	if as == ExecAsTool {
		r.Tools = []OpenAITool{ExecuteTool}
	}
	return r
}

// toolCode finds the code an assistant turn ran: the fenced block equal to
// the execution record's code, else (no record, or a record of a generated
// test program) the turn's last fenced block. It returns the language, the
// code and the text without that block. Code that is not in the text (a
// record of a cell written elsewhere) is returned with the text unchanged.
func toolCode(text string, e *Execution) (lang, code, rest string) {
	fs := fences(text)
	if e != nil && e.Code != "" && !isJudgeProgram(e.Code) {
		want := strings.TrimSpace(e.Code)
		for i := len(fs) - 1; i >= 0; i-- {
			if strings.TrimSpace(fs[i].Code) == want {
				return langOr(fs[i].Lang, e.Language), fs[i].Code, cutSpan(text, fs[i])
			}
		}
		return langOr(e.Language, "python"), e.Code, text
	}
	if len(fs) == 0 {
		return "python", "", text
	}
	f := fs[len(fs)-1]
	elang := ""
	if e != nil {
		elang = e.Language
	}
	return langOr(f.Lang, langOr(elang, "python")), f.Code, cutSpan(text, f)
}

// isJudgeProgram recognizes the test program an older harness stored as a
// record's code in place of the candidate's.
func isJudgeProgram(code string) bool {
	return strings.HasPrefix(code, "# codefeedback test judge")
}

func langOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cutSpan(text string, f fence) string {
	return strings.TrimSpace(text[:f.Start]) + joinNL(text[:f.Start], text[f.End:]) + strings.TrimSpace(text[f.End:])
}

func joinNL(a, b string) string {
	if strings.TrimSpace(a) != "" && strings.TrimSpace(b) != "" {
		return "\n\n"
	}
	return ""
}

// TurnSamples returns one dialogue per assistant turn of d worth training
// on: the messages up to and including that turn, id "<id>#<k>" (k counts
// every assistant turn from 1). A turn whose code the next execution shows
// failing is not made a target (it would teach the bug); it stays in the
// context of the later samples, as in the dialogue. A dialogue with one
// assistant turn, at its end, is returned as is.
func TurnSamples(d *Dialogue) []Dialogue {
	var out []Dialogue
	k := 0
	for i, m := range d.Messages {
		if m.Role != RoleAssistant {
			continue
		}
		k++
		if i+1 < len(d.Messages) && ShowsFailure(d.Messages[i+1]) {
			continue
		}
		p := *d
		p.Messages = d.Messages[:i+1]
		p.ID = d.ID + "#" + strconv.Itoa(k)
		p.SourceID = nil
		out = append(out, p)
	}
	if k == 1 && len(out) == 1 && len(out[0].Messages) == len(d.Messages) {
		return []Dialogue{*d}
	}
	return out
}

// failureHeads start the texts of failed runs: a traceback, or the
// harness's verdicts (see harness.Feedback).
var failureHeads = []string{"Traceback (most recent call last)", "of ", "The code does not compile", "The code raised an exception",
	"An exception was raised in", "Execution timed out"}

// ShowsFailure reports whether m is an execution turn showing that the code
// before it failed: by its record (tests failed; or a non-zero exit, a
// timeout, running out of memory, an exception), else by its text (a
// traceback or a failed test verdict, as this tool and Code-Feedback write
// them).
func ShowsFailure(m Message) bool {
	if e := m.Exec; e != nil && m.Role == RoleExecution {
		if e.Passed != nil {
			return !*e.Passed
		}
		return e.ExitCode != 0 || e.TimedOut || e.OOM || e.Exception != ""
	}
	text := m.Content
	if m.Role != RoleExecution {
		t, ok := strings.CutPrefix(strings.TrimLeft(text, " \n"), strings.TrimSpace(ExecutionPrefix))
		if m.Role != RoleUser || !ok {
			return false
		}
		text = t
	}
	text = strings.TrimLeft(text, " \n")
	if strings.Contains(text, "Traceback (most recent call last)") {
		return true
	}
	for _, h := range failureHeads[2:] {
		if strings.HasPrefix(text, h) {
			return true
		}
	}
	// "N of M tests failed."
	if line, _, _ := strings.Cut(text, "\n"); strings.HasSuffix(line, " failed.") && strings.Contains(line, " of ") {
		return true
	}
	return false
}

// weightLast sets weight 0 on every assistant message but the last.
func weightLast(r *OpenAIRecord) {
	last := -1
	for i, m := range r.Messages {
		if m.Role == RoleAssistant {
			last = i
		}
	}
	zero, one := 0, 1
	for i := range r.Messages {
		if r.Messages[i].Role == RoleAssistant {
			r.Messages[i].Weight = &zero
			if i == last {
				r.Messages[i].Weight = &one
			}
		}
	}
}

// ExportOptions configure Export.
type ExportOptions struct {
	To          ExportFormat
	ExecAs      ExecAs // sharegpt: user (default) or tool (observation turns)
	Split       Split
	Compression string // Parquet codec: snappy (default) or zstd
	// Style of the training layouts (dpo, kto, rl): conversational
	// (default) or standard.
	Style Style
	// OnRecordError, when set, receives each bad input record and decides
	// whether to go on (nil) or stop (an error); when nil the first bad
	// record stops the export.
	OnRecordError func(*RecordError) error
}

// Normalize resolves aliases and checks that the layout, the split and the
// container of out fit together.
func (o ExportOptions) Normalize(out string) (ExportOptions, error) {
	switch o.To {
	case "", ExportParquet:
		o.To = ExportCodeFeedback
	case "openai-tool": // the name older pipeline files use
		o.To = ExportOpenAITools
	}
	if o.To == ExportOpenAITools {
		o.ExecAs = ExecAsTool
	}
	if o.ExecAs == "" {
		o.ExecAs = ExecAsUser
	}
	if o.Split == "" {
		o.Split = SplitDialogue
	}
	if o.Style == "" {
		o.Style = StyleConversational
	}
	switch o.To {
	case ExportCodeFeedback, ExportNative, ExportShareGPT, ExportOpenAI, ExportOpenAITools:
	case ExportDPO, ExportKTO, ExportRL:
		// Records are mined per judged attempt; there is nothing to split.
		if o.Split != SplitDialogue {
			return o, fmt.Errorf("split %q: the %s layout makes its own records from each dialogue's test verdicts", o.Split, o.To)
		}
		switch o.Style {
		case StyleConversational, StyleStandard:
		default:
			return o, fmt.Errorf("style %q: want conversational or standard", o.Style)
		}
		return o, nil
	default:
		return o, fmt.Errorf("unknown export format %q (want codefeedback, native, sharegpt, openai, openai-tools, dpo, kto or rl)", o.To)
	}
	switch o.ExecAs {
	case ExecAsUser, ExecAsTool:
	default:
		return o, fmt.Errorf("execution-as %q: want user or tool", o.ExecAs)
	}
	switch o.Split {
	case SplitDialogue, SplitTurns:
	case SplitWeights:
		if o.To != ExportOpenAI && o.To != ExportOpenAITools {
			return o, fmt.Errorf("split %q needs an OpenAI layout (loss weights exist only there)", o.Split)
		}
	default:
		return o, fmt.Errorf("unknown split %q (want dialogue, turns or weights)", o.Split)
	}
	if IsParquet(out) && o.To != ExportCodeFeedback && o.To != ExportNative {
		return o, fmt.Errorf("%s: Parquet holds the codefeedback or native layout, not %s", out, o.To)
	}
	return o, nil
}

// ExportStats counts an export.
type ExportStats struct {
	Read, Written, Rejected int
	Training                TrainingReport // the training layouts' skips
}

// Export streams the dialogues of in (Code-Feedback/dialogue JSONL, plain or
// compressed, or Parquet) into out in the chosen format. out appears only
// when the export succeeds; an earlier file under that name is kept intact
// otherwise. Written counts samples (more than Read with SplitTurns).
func Export(ctx context.Context, in, out string, opts ExportOptions) (ExportStats, error) {
	var st ExportStats
	next, closeIn, err := openDialogues(in)
	if err != nil {
		return st, err
	}
	defer closeIn()
	w, err := NewDialogueWriter(out, opts)
	if err != nil {
		return st, err
	}
	for {
		if err := ctx.Err(); err != nil {
			w.Abort()
			return st, err
		}
		d, err := next()
		if err == io.EOF {
			break
		}
		var re *RecordError
		if errors.As(err, &re) && opts.OnRecordError != nil {
			st.Rejected++
			if err := opts.OnRecordError(re); err != nil {
				w.Abort()
				return st, err
			}
			continue
		}
		if err != nil {
			w.Abort()
			return st, err
		}
		st.Read++
		if err := w.Write(&d); err != nil {
			w.Abort()
			return st, err
		}
	}
	st.Written = w.Samples()
	st.Training = w.Training()
	return st, w.Close()
}

// DialogueWriter writes dialogues in one export layout. Close publishes the
// file atomically; Abort drops it. Not safe for concurrent use.
type DialogueWriter struct {
	write   func(*Dialogue) error
	close   func() error
	abort   func()
	samples int
	report  func() TrainingReport
}

// Write renders d and writes its sample(s).
func (w *DialogueWriter) Write(d *Dialogue) error { return w.write(d) }

// Close publishes the file (and, for ShareGPT, its dataset_info.json entry).
func (w *DialogueWriter) Close() error { return w.close() }

// Abort drops the file.
func (w *DialogueWriter) Abort() { w.abort() }

// Samples is the number of samples written so far.
func (w *DialogueWriter) Samples() int { return w.samples }

// NewDialogueWriter creates out for dialogues in opts.To (the Code-Feedback
// layout when empty), in Parquet when out ends in .parquet. The export
// command and the pipeline's published outputs share it.
func NewDialogueWriter(out string, opts ExportOptions) (*DialogueWriter, error) {
	o, err := opts.Normalize(out)
	if err != nil {
		return nil, err
	}
	if o.To.Training() {
		return newTrainingWriter(out, o)
	}
	w := &DialogueWriter{}
	var put func(*Dialogue) error
	switch {
	case IsParquet(out) && o.To == ExportNative:
		pw, err := createParquetDialogues(out, ParquetCompression(o.Compression))
		if err != nil {
			return nil, err
		}
		put, w.close, w.abort = func(d *Dialogue) error { return pw.Write(*d) }, pw.Close, pw.Abort
	case IsParquet(out):
		pw, err := createCodeFeedbackParquet(out, ParquetCompression(o.Compression))
		if err != nil {
			return nil, err
		}
		put, w.close, w.abort = pw.Write, pw.Close, pw.Abort
	default:
		jw, err := CreateWriter[any](out)
		if err != nil {
			return nil, err
		}
		put = func(d *Dialogue) error {
			switch o.To {
			case ExportNative:
				return jw.Write(d)
			case ExportShareGPT:
				return jw.Write(ToShareGPT(d, o.ExecAs))
			case ExportOpenAI, ExportOpenAITools:
				r := ToOpenAI(d, o.ExecAs)
				if o.Split != SplitDialogue {
					weightLast(&r)
				}
				return jw.Write(r)
			}
			return jw.Write(ToCodeFeedback(d))
		}
		w.close, w.abort = jw.Close, jw.Abort
		if o.To == ExportShareGPT {
			w.close = func() error {
				if err := jw.Close(); err != nil {
					return err
				}
				return WriteShareGPTInfo(out, o.ExecAs)
			}
		}
	}
	w.write = func(d *Dialogue) error {
		if o.Split != SplitTurns {
			w.samples++
			return put(d)
		}
		for _, p := range TurnSamples(d) {
			if err := put(&p); err != nil {
				return err
			}
			w.samples++
		}
		return nil
	}
	return w, nil
}

// ShareGPTInfo is a dataset_info.json entry for LLaMA-Factory.
type ShareGPTInfo struct {
	FileName   string            `json:"file_name"`
	Formatting string            `json:"formatting"`
	Columns    map[string]string `json:"columns"`
	Tags       map[string]string `json:"tags"`
}

// ShareGPTInfoFor is the dataset_info.json entry describing a ShareGPT
// export at path.
func ShareGPTInfoFor(path string) ShareGPTInfo {
	return ShareGPTInfo{
		FileName:   filepath.Base(path),
		Formatting: "sharegpt",
		Columns:    map[string]string{"messages": "conversations", "system": "system"},
		Tags: map[string]string{"role_tag": "from", "content_tag": "value", "user_tag": "human", "assistant_tag": "gpt",
			"observation_tag": "observation", "function_tag": "function_call", "system_tag": "system"},
	}
}

// WriteShareGPTInfo adds (or replaces) the entry for the ShareGPT file at
// path in dataset_info.json beside it, keeping other entries; the dataset's
// name is the file name without its extensions.
func WriteShareGPTInfo(path string, _ ExecAs) error {
	info := filepath.Join(filepath.Dir(path), "dataset_info.json")
	all := map[string]json.RawMessage{}
	if b, err := os.ReadFile(info); err == nil {
		if err := json.Unmarshal(b, &all); err != nil {
			return fmt.Errorf("%s: %w", info, err)
		}
	}
	name := filepath.Base(path)
	if i := strings.IndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	b, err := json.Marshal(ShareGPTInfoFor(path))
	if err != nil {
		return err
	}
	all[name] = b
	return WriteJSONAtomic(info, all)
}

// OutputLayouts are the pipeline's trainer-facing output formats by name
// (`outputs: [{format: NAME}]`), each the options the export command uses.
func OutputLayouts() map[string]ExportOptions {
	return map[string]ExportOptions{
		"codefeedback":       {To: ExportCodeFeedback},
		"parquet":            {To: ExportParquet},
		"native":             {To: ExportNative},
		"sharegpt":           {To: ExportShareGPT},
		"sharegpt-tool":      {To: ExportShareGPT, ExecAs: ExecAsTool},
		"openai":             {To: ExportOpenAI},
		"openai-tool":        {To: ExportOpenAITools},
		"openai-tools":       {To: ExportOpenAITools},
		"openai-turns":       {To: ExportOpenAI, Split: SplitTurns},
		"openai-weights":     {To: ExportOpenAI, Split: SplitWeights},
		"codefeedback-turns": {To: ExportCodeFeedback, Split: SplitTurns},
		// Training records mined from test verdicts (training.go); a
		// dialogue yields zero or more of them.
		"dpo": {To: ExportDPO},
		"kto": {To: ExportKTO},
		"rl":  {To: ExportRL},
	}
}

// openDialogues opens a dialogue stream from Parquet or JSONL.
func openDialogues(path string) (func() (Dialogue, error), func(), error) {
	if IsParquet(path) {
		r, err := openParquetDialogues(path)
		if err != nil {
			return nil, nil, err
		}
		return r.Read, func() { r.Close() }, nil
	}
	src, err := OpenSource(path, ImportOptions{Format: FormatCodeFeedback})
	if err != nil {
		return nil, nil, err
	}
	s := Parallel(src, 0)
	return func() (Dialogue, error) {
		r, err := s.Next()
		if err != nil {
			return Dialogue{}, err
		}
		return *r.Dialogue, nil
	}, func() { s.Close() }, nil
}
