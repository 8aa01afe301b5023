package schema

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"
)

// Reading the training layouts back as dialogues, for verify: each side of
// a pair, each unpaired attempt and each RL record's reference becomes the
// prompt, the assistant turn, and the native execution turn behind it
// (with its record), which verify re-runs.

// trainingProbe tells training records apart from dialogues.
type trainingProbe struct {
	Chosen      json.RawMessage `json:"chosen"`
	Rejected    json.RawMessage `json:"rejected"`
	Completion  json.RawMessage `json:"completion"`
	Label       json.RawMessage `json:"label"`
	RewardModel json.RawMessage `json:"reward_model"`
}

// IsTrainingRecord reports whether rec is a dpo, kto or rl record.
func IsTrainingRecord(rec json.RawMessage) bool {
	var p trainingProbe
	if json.Unmarshal(rec, &p) != nil {
		return false
	}
	return (p.Chosen != nil && p.Rejected != nil) || (p.Completion != nil && p.Label != nil) || p.RewardModel != nil
}

// promptMessages reads a prompt in either style: a role/content list, or
// a string (one user turn).
func promptMessages(raw json.RawMessage) ([]Message, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []Message{{Role: RoleUser, Content: s}}, nil
	}
	var cm []ChatMessage
	if err := json.Unmarshal(raw, &cm); err != nil {
		return nil, fmt.Errorf("want a string or a list of {role, content}: %w", err)
	}
	out := make([]Message, len(cm))
	for i, m := range cm {
		out[i] = Message{Role: m.Role, Content: m.Content}
	}
	return out, nil
}

// executionTurn decodes an execution column: the JSON of a native
// execution message (a string), or that message itself.
func executionTurn(raw json.RawMessage) (Message, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var m Message
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("execution turn: %w", err)
	}
	if m.Role != RoleExecution || m.Exec == nil {
		return m, errors.New("execution turn: want a native execution message with its record")
	}
	return m, nil
}

func sideDialogue(id string, prompt, completion []Message, exec json.RawMessage) (Dialogue, error) {
	x, err := executionTurn(exec)
	if err != nil {
		return Dialogue{}, fmt.Errorf("%s: %w", id, err)
	}
	d := Dialogue{ID: id, Messages: append(append(append([]Message{}, prompt...), completion...), x)}
	return d, d.Validate()
}

// DecodeTraining decodes a dpo, kto or rl record into the dialogues verify
// re-runs: two for a pair (id#chosen, id#rejected), one otherwise.
func DecodeTraining(rec json.RawMessage) ([]Dialogue, error) {
	var r struct {
		ID                string          `json:"id"`
		Prompt            json.RawMessage `json:"prompt"`
		Chosen            json.RawMessage `json:"chosen"`
		Rejected          json.RawMessage `json:"rejected"`
		ChosenExecution   json.RawMessage `json:"chosen_execution"`
		RejectedExecution json.RawMessage `json:"rejected_execution"`
		Completion        json.RawMessage `json:"completion"`
		Execution         json.RawMessage `json:"execution"`
		RewardModel       json.RawMessage `json:"reward_model"`
		ExtraInfo         RLExtra         `json:"extra_info"`
	}
	if err := json.Unmarshal(rec, &r); err != nil {
		return nil, err
	}
	prompt, err := promptMessages(r.Prompt)
	if err != nil {
		return nil, fmt.Errorf("prompt: %w", err)
	}
	completion := func(raw json.RawMessage) ([]Message, error) {
		ms, err := promptMessages(raw)
		if len(ms) == 1 && ms[0].Role == RoleUser { // a standard-style completion string
			ms[0].Role = RoleAssistant
		}
		return ms, err
	}
	switch {
	case r.Chosen != nil:
		c, err := completion(r.Chosen)
		if err != nil {
			return nil, fmt.Errorf("chosen: %w", err)
		}
		rj, err := completion(r.Rejected)
		if err != nil {
			return nil, fmt.Errorf("rejected: %w", err)
		}
		dc, err := sideDialogue(r.ID+"#chosen", prompt, c, r.ChosenExecution)
		if err != nil {
			return nil, err
		}
		dr, err := sideDialogue(r.ID+"#rejected", prompt, rj, r.RejectedExecution)
		if err != nil {
			return nil, err
		}
		return []Dialogue{dc, dr}, nil
	case r.Completion != nil:
		c, err := completion(r.Completion)
		if err != nil {
			return nil, fmt.Errorf("completion: %w", err)
		}
		d, err := sideDialogue(r.ID, prompt, c, r.Execution)
		return []Dialogue{d}, err
	default:
		e := r.ExtraInfo
		id := cmp.Or(e.ID, fmt.Sprintf("rl-%d", e.Index))
		ref := []Message{{Role: RoleAssistant, Content: "```" + e.Language + "\n" + e.Reference + "\n```"}}
		d, err := sideDialogue(id, prompt, ref, json.RawMessage(e.ReferenceExecution))
		return []Dialogue{d}, err
	}
}

// trainingParquet reads a training layout's Parquet file back as JSON
// records (nil, nil when the file is not one).
func trainingParquet(path string) ([]json.RawMessage, error) {
	f, pf, err := OpenParquet(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := pf.Schema()
	_, std := s.Lookup("prompt") // a leaf: the standard style's string
	has := func(col string) bool { _, ok := lookupPrefix(s, col); return ok }
	switch {
	case has("chosen") && std:
		return readRows[dpoStdRow](f, pf.Size())
	case has("chosen"):
		return readRows[dpoConvRow](f, pf.Size())
	case has("label") && std:
		return readRows[ktoStdRow](f, pf.Size())
	case has("label"):
		return readRows[ktoConvRow](f, pf.Size())
	case has("reward_model") && std:
		return readRows[rlStdRow](f, pf.Size())
	case has("reward_model"):
		return readRows[rlConvRow](f, pf.Size())
	}
	return nil, nil
}

// readRows reads every row as T and renders it in the JSONL layout's
// field names.
func readRows[T any](f *os.File, size int64) ([]json.RawMessage, error) {
	rows, err := parquet.Read[T](f, size)
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(rows))
	for i := range rows {
		b, err := json.Marshal(trainingJSON(&rows[i]))
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

func chat(ms []ParquetMessage) []ChatMessage {
	out := make([]ChatMessage, len(ms))
	for i, m := range ms {
		out[i] = ChatMessage(m)
	}
	return out
}

// trainingJSON is a Parquet row as its JSONL record.
func trainingJSON(row any) any {
	switch r := row.(type) {
	case *dpoConvRow:
		return PairRecord{r.ID, chat(r.Prompt), chat(r.Chosen), chat(r.Rejected), r.RejectedError, r.ChosenExecution, r.RejectedExecution, r.DialogueID}
	case *dpoStdRow:
		return PairRecord{r.ID, r.Prompt, r.Chosen, r.Rejected, r.RejectedError, r.ChosenExecution, r.RejectedExecution, r.DialogueID}
	case *ktoConvRow:
		return UnpairedRecord{r.ID, chat(r.Prompt), chat(r.Completion), r.Label, r.Error, r.Execution, r.DialogueID}
	case *ktoStdRow:
		return UnpairedRecord{r.ID, r.Prompt, r.Completion, r.Label, r.Error, r.Execution, r.DialogueID}
	case *rlConvRow:
		return RLRecord{r.DataSource, chat(r.Prompt), r.Ability, r.RewardModel, r.ExtraInfo}
	case *rlStdRow:
		return RLRecord{r.DataSource, r.Prompt, r.Ability, r.RewardModel, r.ExtraInfo}
	}
	panic(fmt.Sprintf("trainingJSON: %T", row))
}
