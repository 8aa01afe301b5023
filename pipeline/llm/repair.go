package llm

import (
	"context"
	"fmt"
)

// ParseError is returned by ChatParse when no answer could be read after
// the allowed repairs. Raw is the last answer's text, kept so the engine can
// record the failure with what the model actually said.
type ParseError struct {
	Raw      string
	Attempts int   // answers read (1 + repairs)
	Err      error // the last parse error
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("llm: answer unreadable after %d tries: %v", e.Attempts, e.Err)
}

func (e *ParseError) Unwrap() error { return e.Err }

// Permanent reports true: the same request gets the same unreadable answer
// (answers are cached), so retrying it is pointless; the pipeline engine
// caches the failure (pipeline.IsPermanent).
func (e *ParseError) Permanent() bool { return true }

// RepairPrompt builds the user message sent after an unreadable answer; the
// default says what went wrong and asks for the same content in the
// expected format.
type RepairPrompt func(parseErr error) string

// DefaultRepair is the RepairPrompt used when none is given.
func DefaultRepair(parseErr error) string {
	return fmt.Sprintf("Your previous answer could not be read (%v). "+
		"Answer the same request again, strictly in the format that was asked for, with nothing else.", parseErr)
}

// ChatParse sends req and parses the answer with parse. When parse fails it
// appends the answer and a repair message to the conversation and asks
// again, at most repairs times, then returns a *ParseError carrying the last
// raw text. Model errors (budget, retries exhausted, ...) are returned as
// they are. The returned Response is the one that parsed (or the last one).
// repair may be nil for DefaultRepair.
func ChatParse[T any](ctx context.Context, c Chatter, req Request, repairs int, repair RepairPrompt,
	parse func(string) (T, error)) (T, Response, error) {
	var zero T
	if repair == nil {
		repair = DefaultRepair
	}
	msgs := append([]Message(nil), req.Messages...)
	for try := 0; ; try++ {
		req.Messages = msgs
		resp, err := c.Chat(ctx, req)
		if err != nil {
			return zero, resp, err
		}
		v, perr := parse(resp.Text)
		if perr == nil {
			return v, resp, nil
		}
		if try >= repairs {
			return zero, resp, &ParseError{Raw: resp.Text, Attempts: try + 1, Err: perr}
		}
		msgs = append(msgs, Assistant(resp.Text), User(repair(perr)))
	}
}
