package pipeline

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// ErrTooManyFailed means a stage's failed share passed the run's
// FailThreshold: every stage ran and its results are stored, dead letters
// are written, but no output was published.
var ErrTooManyFailed = errors.New("too many failed items")

// FailThreshold is when failed items fail a run: a stage fails the run when
// more than this share of its items failed. A model's answers fail now and
// then; a stage that runs no model (mutation, grouping, judging) is
// deterministic, so any failure there is a bug or a broken sandbox.
type FailThreshold struct {
	NoModel float64 // share tolerated in a stage that uses no model
	Model   float64 // share tolerated in a stage that calls a model
}

// DefaultFailThreshold is the CLI's default: any failed item in a stage
// with no model, more than 5% in a stage with one.
var DefaultFailThreshold = FailThreshold{NoModel: 0, Model: 0.05}

// ModelUser is implemented by stages that call a model; UsesModel reports
// whether this configured stage does (the FailThreshold it gets).
type ModelUser interface{ UsesModel() bool }

// tooManyFailed returns a sentence naming the stage's failed share and its
// first dead letters when it passes the threshold, else "".
func (r *runner) tooManyFailed(name string, usesModel bool, c Counts) string {
	if r.o.MaxFailed == nil || c.In == 0 || c.Failed == 0 {
		return ""
	}
	limit := r.o.MaxFailed.NoModel
	kind := "no model"
	if usesModel {
		limit, kind = r.o.MaxFailed.Model, "a model"
	}
	share := float64(c.Failed) / float64(c.In)
	if share <= limit {
		return ""
	}
	return fmt.Sprintf("stage %s: %d of %d items failed (%.1f%%; at most %.1f%% allowed in a stage with %s): %s",
		name, c.Failed, c.In, 100*share, 100*limit, kind, deadIDs(r.stageDir(name), 5))
}

// deadIDs lists the first n dead letters of a stage directory as
// "id (error)".
func deadIDs(dir string, n int) string {
	f, err := os.Open(dir + "/dead-letters.jsonl")
	if err != nil {
		return "dead letters unreadable: " + err.Error()
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	more := 0
	for sc.Scan() {
		if len(out) == n {
			more++
			continue
		}
		var d deadLetter
		if json.Unmarshal(sc.Bytes(), &d) == nil {
			msg := d.Error
			if len(msg) > 120 {
				msg = msg[:120] + "..."
			}
			out = append(out, fmt.Sprintf("%s (%s)", d.ItemID, msg))
		}
	}
	s := strings.Join(out, "; ")
	if more > 0 {
		s += fmt.Sprintf("; and %d more", more)
	}
	return s
}
