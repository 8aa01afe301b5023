package leak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"

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
// record per dropped dialogue. JSONL and JSON-array inputs keep their
// format and every kept record byte for byte (line endings included;
// compression by out's extension); Parquet inputs are rewritten as Parquet.
// Both files appear only when complete. It refuses (ErrSameFile) an out or
// removed that is the input file under any name. It returns the number of
// records kept.
func Decontaminate(ctx context.Context, in, out, removed string, flagged map[int][]schema.Finding) (int, error) {
	if err := RefuseSameFile(in, out, removed); err != nil {
		return 0, err
	}
	var rw schema.Writer[Removed]
	if removed != "" {
		var err error
		if rw, err = schema.CreateWriter[Removed](removed); err != nil {
			return 0, fmt.Errorf("audit: decontaminate: %w", err)
		}
		defer rw.Abort() // no-op after Close
	}
	kept, seq := 0, 0
	// dropAt records the removal of the dialogue at position at.
	dropAt := func(at int, id string) error {
		if rw == nil {
			return nil
		}
		fs := flagged[at]
		return rw.Write(Removed{DialogueID: id, Seq: at, Reason: Reason(fs), Findings: fs})
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
				if err := dropAt(seq, d.ID); err != nil {
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
		var err error
		kept, err = copyKept(ctx, in, out, func(seq int, rec []byte) (bool, error) {
			if _, bad := flagged[seq]; !bad {
				return false, nil
			}
			var head struct {
				ID json.RawMessage `json:"id"`
			}
			_ = json.Unmarshal(rec, &head) // the id only labels the removal
			id := string(head.ID)
			var s string
			if json.Unmarshal(head.ID, &s) == nil {
				id = s
			}
			return true, dropAt(seq, id)
		})
		if err != nil {
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

// ErrSameFile means an output names the input file.
var ErrSameFile = errors.New("output is the input file")

// RefuseSameFile fails with ErrSameFile when one of outs is the file in
// under another name (./x, a symbolic or hard link), as os.SameFile sees
// it: writing it would destroy the input. Outputs that do not exist yet
// and an input that cannot be read are not its concern.
func RefuseSameFile(in string, outs ...string) error {
	st, err := os.Stat(in)
	if err != nil {
		return nil
	}
	for _, o := range outs {
		if o == "" {
			continue
		}
		if ost, err := os.Stat(o); err == nil && os.SameFile(st, ost) {
			return fmt.Errorf("audit: %s: %w %s; write elsewhere", o, ErrSameFile, in)
		}
	}
	return nil
}
