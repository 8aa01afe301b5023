package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/codefeedback/codefeedback/schema"
)

// ReadDialogues streams the dialogues of a dataset file: Parquet, or
// Code-Feedback-style JSONL / JSON array (plain, .gz, .zst), read through the
// schema package. Any bad record ends the stream with an error naming its
// line, because decontamination relies on the records' order. Duplicate ids
// are allowed: findings name dialogues by id, removal goes by position.
func ReadDialogues(ctx context.Context, path string) iter.Seq2[*schema.Dialogue, error] {
	return func(yield func(*schema.Dialogue, error) bool) {
		if schema.IsParquet(path) {
			r, err := schema.OpenReader[schema.Dialogue](path)
			if err != nil {
				yield(nil, err)
				return
			}
			defer r.Close()
			for d, err := range schema.All(ctx, r) {
				if err != nil {
					yield(nil, err)
					return
				}
				if !yield(&d, nil) {
					return
				}
			}
			return
		}
		src, err := schema.OpenSource(path, schema.ImportOptions{AllowDuplicates: true})
		if err != nil {
			yield(nil, err)
			return
		}
		defer src.Close()
		if !src.Dialogues() {
			yield(nil, fmt.Errorf("%s: holds %s records, not dialogues", path, src.Format()))
			return
		}
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			r, err := src.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(r.Dialogue, nil) {
				return
			}
		}
	}
}

// RawRecords streams the raw records of a Code-Feedback-style JSONL or JSON
// array file (plain, .gz, .zst) for RunRecords, after checking with the
// schema package that the file holds dialogues. Each record is a fresh
// slice.
func RawRecords(ctx context.Context, path string) iter.Seq2[json.RawMessage, error] {
	return func(yield func(json.RawMessage, error) bool) {
		src, err := schema.OpenSource(path, schema.ImportOptions{AllowDuplicates: true})
		if err != nil {
			yield(nil, err)
			return
		}
		isDialogues, format := src.Dialogues(), src.Format()
		src.Close()
		if !isDialogues {
			yield(nil, fmt.Errorf("%s: holds %s records, not dialogues", path, format))
			return
		}
		raw, err := schema.OpenRaw(path)
		if err != nil {
			yield(nil, err)
			return
		}
		defer raw.Close()
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			rec, err := raw.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !yield(append(json.RawMessage(nil), rec...), nil) {
				return
			}
		}
	}
}

// Removed is one line of the removed-dialogues file: which dialogue, its
// position in the input (from 0), and every reason it was flagged.
type Removed struct {
	DialogueID string           `json:"dialogue_id"`
	Seq        int              `json:"seq"`
	Reason     string           `json:"reason"`
	Findings   []schema.Finding `json:"findings"`
}

// Decontaminate copies the dataset at in to out without the dialogues at the
// positions in flagged, and writes removed (when not "") with one Removed
// record per dropped dialogue. JSONL and JSON-array inputs are copied record
// by record, byte for byte up to JSON whitespace, as JSONL (compressed by
// out's extension); Parquet inputs are rewritten as Parquet. Both files
// appear only when complete. It returns the number of records kept.
func Decontaminate(ctx context.Context, in, out, removed string, flagged map[int][]schema.Finding) (int, error) {
	var rw schema.Writer[Removed]
	if removed != "" {
		var err error
		if rw, err = schema.CreateWriter[Removed](removed); err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
		defer rw.Abort() // no-op after Close
	}
	kept, seq := 0, 0
	// drop records the removal of the dialogue at seq.
	drop := func(id string) error {
		if rw == nil {
			return nil
		}
		fs := flagged[seq]
		return rw.Write(Removed{DialogueID: id, Seq: seq, Reason: reason(fs), Findings: fs})
	}
	if schema.IsParquet(in) {
		w, err := schema.CreateWriter[schema.Dialogue](out)
		if err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
		defer w.Abort()
		for d, err := range ReadDialogues(ctx, in) {
			if err != nil {
				return 0, fmt.Errorf("audit: decontaminate: %w", err)
			}
			if _, bad := flagged[seq]; bad {
				if err := drop(d.ID); err != nil {
					return 0, fmt.Errorf("audit: decontaminate: %w", err)
				}
			} else {
				if err := w.Write(*d); err != nil {
					return 0, fmt.Errorf("audit: decontaminate: %w", err)
				}
				kept++
			}
			seq++
		}
		if err := w.Close(); err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
	} else {
		raw, err := schema.OpenRaw(in)
		if err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
		defer raw.Close()
		w, err := schema.CreateWriter[json.RawMessage](out)
		if err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
		defer w.Abort()
		for {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("audit: decontaminate: %w", err)
			}
			rec, err := raw.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return 0, fmt.Errorf("audit: decontaminate: %w", err)
			}
			if _, bad := flagged[seq]; bad {
				var head struct {
					ID json.RawMessage `json:"id"`
				}
				_ = json.Unmarshal(rec, &head) // the id only labels the removal
				id := string(head.ID)
				var s string
				if json.Unmarshal(head.ID, &s) == nil {
					id = s
				}
				if err := drop(id); err != nil {
					return 0, fmt.Errorf("audit: decontaminate: %w", err)
				}
			} else {
				if err := w.Write(rec); err != nil {
					return 0, fmt.Errorf("audit: decontaminate: %w", err)
				}
				kept++
			}
			seq++
		}
		if err := w.Close(); err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
	}
	if rw != nil {
		if err := rw.Close(); err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
	}
	return kept, nil
}

// FlaggedBySeq collects the Results' findings by input position, for
// Decontaminate. Use it as Run's each callback.
type FlaggedBySeq map[int][]schema.Finding

// Add records r when it is flagged.
func (f FlaggedBySeq) Add(r *Result) error {
	if r.Flagged() {
		f[r.Seq] = r.Findings
	}
	return nil
}
