package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// ExportFormat names a trainer-facing output format.
type ExportFormat string

const (
	ExportCodeFeedback ExportFormat = "codefeedback" // {"id","messages":[{role,content}]}
	ExportParquet      ExportFormat = "parquet"      // ParquetDialogue rows
	ExportShareGPT     ExportFormat = "sharegpt"     // {"id","conversations":[{from,value}]}
	ExportOpenAI       ExportFormat = "openai"       // OpenAI chat fine-tuning {"messages":[...]}
)

// ExecAs chooses how RoleExecution turns are rendered where a format has a
// choice: as a user turn holding an output block, or as a tool turn
// (OpenAI "tool" answering an assistant tool call, ShareGPT "observation").
type ExecAs string

const (
	ExecAsUser ExecAs = "user"
	ExecAsTool ExecAs = "tool"
)

// ExecutionPrefix starts an execution turn rendered as a user turn; it is
// how Code-Feedback itself writes execution output.
const ExecutionPrefix = "Execution result: \n"

// ToCodeFeedback renders a dialogue as a Code-Feedback record. The id is the
// original representation (SourceID) when the dialogue was imported with a
// non-string id, else the string id. Execution turns become user turns.
func ToCodeFeedback(d *Dialogue) CodeFeedbackRecord {
	id := d.SourceID
	if len(id) == 0 {
		id, _ = json.Marshal(d.ID)
	}
	r := CodeFeedbackRecord{ID: id, Messages: make([]ChatMessage, len(d.Messages))}
	for i, m := range d.Messages {
		if m.Role == RoleExecution {
			r.Messages[i] = ChatMessage{Role: RoleUser, Content: ExecutionPrefix + m.Content}
			continue
		}
		r.Messages[i] = ChatMessage{Role: m.Role, Content: m.Content}
	}
	return r
}

// ShareGPTRecord is the ShareGPT layout (LLaMA-Factory, FastChat, Axolotl).
type ShareGPTRecord struct {
	ID            string         `json:"id"`
	Conversations []ShareGPTTurn `json:"conversations"`
}

// ShareGPTTurn is one ShareGPT turn: from is human, gpt, system or observation.
type ShareGPTTurn struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// ToShareGPT renders a dialogue as ShareGPT. Execution turns are "human"
// turns with the output block, or "observation" turns with ExecAsTool.
func ToShareGPT(d *Dialogue, as ExecAs) ShareGPTRecord {
	r := ShareGPTRecord{ID: d.ID, Conversations: make([]ShareGPTTurn, len(d.Messages))}
	for i, m := range d.Messages {
		t := ShareGPTTurn{Value: m.Content}
		switch m.Role {
		case RoleSystem:
			t.From = "system"
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
		r.Conversations[i] = t
	}
	return r
}

// OpenAIRecord is one line of an OpenAI chat fine-tuning file.
type OpenAIRecord struct {
	Messages []OpenAIMessage `json:"messages"`
}

// OpenAIMessage is a chat message of the fine-tuning format.
type OpenAIMessage struct {
	Role       string           `json:"role"`
	Content    *string          `json:"content"`
	ToolCalls  []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID string           `json:"tool_call_id,omitempty"`
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

// ExecuteToolName is the function name execution tool calls use.
const ExecuteToolName = "execute_code"

// ToOpenAI renders a dialogue for OpenAI chat fine-tuning. With ExecAsTool
// an execution turn that follows an assistant turn becomes a "tool" message
// answering a tool call added to that assistant message (arguments: the
// executed language and code, from the execution record or the assistant's
// text); otherwise it is a user turn with the output block.
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
				lang, code := "python", ""
				if m.Exec != nil {
					lang, code = m.Exec.Language, m.Exec.Code
				}
				args, _ := json.Marshal(map[string]string{"language": lang, "code": code})
				var tc OpenAIToolCall
				tc.ID, tc.Type = id, "function"
				tc.Function.Name, tc.Function.Arguments = ExecuteToolName, string(args)
				r.Messages[last].ToolCalls = append(r.Messages[last].ToolCalls, tc)
				msg = OpenAIMessage{Role: "tool", Content: &content, ToolCallID: id}
			} else {
				c := ExecutionPrefix + m.Content
				msg = OpenAIMessage{Role: RoleUser, Content: &c}
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return r
}

// ExportOptions configure Export.
type ExportOptions struct {
	To          ExportFormat
	ExecAs      ExecAs
	Compression string // Parquet codec: snappy (default) or zstd
	// OnRecordError, when set, receives each bad input record and decides
	// whether to go on (nil) or stop (an error); when nil the first bad
	// record stops the export.
	OnRecordError func(*RecordError) error
}

// ExportStats counts an export.
type ExportStats struct{ Read, Written, Rejected int }

// Export streams the dialogues of in (Code-Feedback/dialogue JSONL, plain or
// compressed, or Parquet) into out in the chosen format. out appears only
// when the export succeeds; an earlier file under that name is kept intact
// otherwise.
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
	write, commit, abort := w.Write, w.Close, w.Abort
	for {
		if err := ctx.Err(); err != nil {
			abort()
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
				abort()
				return st, err
			}
			continue
		}
		if err != nil {
			abort()
			return st, err
		}
		st.Read++
		if err := write(&d); err != nil {
			abort()
			return st, err
		}
		st.Written++
	}
	return st, commit()
}

// DialogueWriter writes dialogues in one export format. Close publishes the
// file atomically; Abort drops it. Not safe for concurrent use.
type DialogueWriter struct {
	Write func(*Dialogue) error
	Close func() error
	Abort func()
}

// NewDialogueWriter creates out for dialogues in opts.To (Code-Feedback JSONL
// when empty). The export command and the pipeline's published outputs share it.
func NewDialogueWriter(out string, opts ExportOptions) (DialogueWriter, error) {
	switch opts.To {
	case ExportParquet:
		w, err := CreateWriter[Dialogue](out, ParquetCompression(opts.Compression))
		if err != nil {
			return DialogueWriter{}, err
		}
		return DialogueWriter{Write: func(d *Dialogue) error { return w.Write(*d) }, Close: w.Close, Abort: w.Abort}, nil
	case ExportCodeFeedback, ExportShareGPT, ExportOpenAI, "":
		if IsParquet(out) {
			return DialogueWriter{}, fmt.Errorf("%s: a .parquet name needs the parquet format", out)
		}
		w, err := CreateWriter[any](out)
		if err != nil {
			return DialogueWriter{}, err
		}
		write := func(d *Dialogue) error {
			switch opts.To {
			case ExportShareGPT:
				return w.Write(ToShareGPT(d, opts.ExecAs))
			case ExportOpenAI:
				return w.Write(ToOpenAI(d, opts.ExecAs))
			}
			return w.Write(ToCodeFeedback(d))
		}
		return DialogueWriter{Write: write, Close: w.Close, Abort: w.Abort}, nil
	}
	return DialogueWriter{}, fmt.Errorf("unknown export format %q (want codefeedback, parquet, sharegpt or openai)", opts.To)
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
	s, err := OpenSource(path, ImportOptions{Format: FormatCodeFeedback})
	if err != nil {
		return nil, nil, err
	}
	return func() (Dialogue, error) {
		r, err := s.Next()
		if err != nil {
			return Dialogue{}, err
		}
		return *r.Dialogue, nil
	}, func() { s.Close() }, nil
}
