package schema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"strconv"
	"strings"
)

// ReadShipped streams the dialogues of any file Export writes (and any
// Code-Feedback-style or native file): Parquet of either layout; JSONL
// (plain, .gz, .zst) of the native, Code-Feedback, ShareGPT or OpenAI
// layouts, told apart per record. ShareGPT and OpenAI records come back in
// the Code-Feedback layout's terms: an observation or tool turn is a user
// turn starting ExecutionPrefix, and an execute_code call's code returns
// to the assistant's text as a fenced block, so the dialogue reads as the
// Code-Feedback export of the same run does. It stops at the first error.
func ReadShipped(ctx context.Context, path string) iter.Seq2[*Dialogue, error] {
	return func(yield func(*Dialogue, error) bool) {
		if IsParquet(path) {
			if recs, err := trainingParquet(path); err != nil || recs != nil {
				yieldTraining(yield, recs, err)
				return
			}
			r, err := openParquetDialogues(path)
			if err != nil {
				yield(nil, err)
				return
			}
			defer r.Close()
			for d, err := range All[Dialogue](ctx, r) {
				if !yield(&d, err) || err != nil {
					return
				}
			}
			return
		}
		raw, err := OpenRaw(path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer raw.Close()
		for n := 1; ; n++ {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			rec, err := raw.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if IsTrainingRecord(rec) { // dpo, kto, rl: one or two dialogues a record
				ds, err := DecodeTraining(rec)
				if err != nil {
					yield(nil, raw.Errorf("%v", err))
					return
				}
				for i := range ds {
					if !yield(&ds[i], nil) {
						return
					}
				}
				continue
			}
			d, err := DecodeShipped(rec, n)
			if err != nil {
				yield(nil, raw.Errorf("%v", err))
				return
			}
			if !yield(&d, nil) {
				return
			}
		}
	}
}

// DecodeShipped decodes one record of any export layout (see ReadShipped);
// n numbers records without an id (OpenAI lines).
func DecodeShipped(rec json.RawMessage, n int) (Dialogue, error) {
	var probe struct {
		ID            json.RawMessage `json:"id"`
		Conversations json.RawMessage `json:"conversations"`
		Messages      json.RawMessage `json:"messages"`
		Tools         json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(rec, &probe); err != nil {
		return Dialogue{}, err
	}
	var d Dialogue
	var err error
	switch {
	case probe.Conversations != nil:
		d, err = fromShareGPT(rec)
	case probe.Messages != nil && (probe.ID == nil || probe.Tools != nil):
		d, err = fromOpenAI(rec, n)
	default:
		return DecodeDialogue(rec)
	}
	if err != nil {
		return d, err
	}
	return d, d.Validate()
}

func fromShareGPT(rec json.RawMessage) (Dialogue, error) {
	var r ShareGPTRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return Dialogue{}, fmt.Errorf("sharegpt record: %w", err)
	}
	d := Dialogue{ID: r.ID}
	if r.System != "" {
		d.Messages = append(d.Messages, Message{Role: RoleSystem, Content: r.System})
	}
	for i, t := range r.Conversations {
		m := Message{Content: t.Value}
		switch t.From {
		case "human", "user":
			m.Role = RoleUser
		case "gpt", "assistant":
			m.Role = RoleAssistant
		case "observation":
			m.Role, m.Content = RoleUser, ExecutionPrefix+t.Value
		case "system":
			m.Role = RoleSystem
		default:
			return d, fmt.Errorf("sharegpt turn %d: unknown from %q", i, t.From)
		}
		d.Messages = append(d.Messages, m)
	}
	if d.ID == "" {
		d.ID = DialogueID(d.Messages)
	}
	return d, nil
}

func fromOpenAI(rec json.RawMessage, n int) (Dialogue, error) {
	var r OpenAIRecord
	if err := json.Unmarshal(rec, &r); err != nil {
		return Dialogue{}, fmt.Errorf("openai record: %w", err)
	}
	d := Dialogue{ID: "line-" + strconv.Itoa(n)}
	for i, m := range r.Messages {
		text := ""
		if m.Content != nil {
			text = *m.Content
		}
		switch m.Role {
		case RoleSystem, RoleUser:
			d.Messages = append(d.Messages, Message{Role: m.Role, Content: text})
		case RoleAssistant:
			for _, tc := range m.ToolCalls {
				var args struct{ Language, Code string }
				if err := json.Unmarshal([]byte(tc.Function.Arguments), &args); err != nil {
					return d, fmt.Errorf("message %d: tool call arguments: %w", i, err)
				}
				if text != "" {
					text += "\n\n"
				}
				text += "```" + strings.ToLower(args.Language) + "\n" + strings.TrimRight(args.Code, "\n") + "\n```"
			}
			d.Messages = append(d.Messages, Message{Role: RoleAssistant, Content: text})
		case "tool":
			d.Messages = append(d.Messages, Message{Role: RoleUser, Content: ExecutionPrefix + text})
		default:
			return d, errors.New("unknown role " + strconv.Quote(m.Role))
		}
	}
	return d, nil
}

// yieldTraining yields the dialogues of a training layout's Parquet rows.
func yieldTraining(yield func(*Dialogue, error) bool, recs []json.RawMessage, err error) {
	if err != nil {
		yield(nil, err)
		return
	}
	for i, rec := range recs {
		ds, err := DecodeTraining(rec)
		if err != nil {
			yield(nil, fmt.Errorf("row %d: %w", i+1, err))
			return
		}
		for j := range ds {
			if !yield(&ds[j], nil) {
				return
			}
		}
	}
}
