package pipeline

import (
	"encoding/json"
	"fmt"

	"github.com/codefeedback/codefeedback/schema"
)

// Item kinds for the schema package's records. A stage may define more kinds
// (any lowercase word); the engine never looks inside Data.
const (
	KindQuery    = "query"    // schema.Query
	KindProblem  = "problem"  // schema.Problem
	KindDialogue = "dialogue" // schema.Dialogue
	KindRating   = "rating"   // schema.Rating
	KindFinding  = "finding"  // schema.Finding
)

// Item is the envelope every record travels in between stages, so stages of
// different record types chain: a filter stage reads query items and emits
// query and rating items, the next stage picks the kinds it handles.
//
// ID must be stable for the same content (schema.StableID); the engine uses
// it for sharding, dead letters and ordering diagnostics. Data is the record's
// JSON encoding and is never modified by the engine.
type Item struct {
	ID   string          `json:"id"`
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

// NewItem encodes record v as an item of the given kind and id.
func NewItem(kind, id string, v any) (Item, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Item{}, fmt.Errorf("pipeline: encode %s item %s: %w", kind, id, err)
	}
	return Item{ID: id, Kind: kind, Data: b}, nil
}

// Decode decodes the item's record into v.
func (it Item) Decode(v any) error {
	if err := json.Unmarshal(it.Data, v); err != nil {
		return fmt.Errorf("pipeline: decode %s item %s: %w", it.Kind, it.ID, err)
	}
	return nil
}

// As decodes an item's record as T, checking the kind. Use it in stages:
//
//	q, err := pipeline.As[schema.Query](it, pipeline.KindQuery)
func As[T any](it Item, kind string) (T, error) {
	var v T
	if it.Kind != kind {
		return v, fmt.Errorf("pipeline: item %s is a %q, want %q", it.ID, it.Kind, kind)
	}
	err := it.Decode(&v)
	return v, err
}

// OwnDialogue is out's dialogue when out is a dialogue the stage called
// stage made; an Observer sees every output, dialogues that merely pass
// through it too.
func OwnDialogue(out Item, stage string) (schema.Dialogue, bool) {
	if out.Kind != KindDialogue {
		return schema.Dialogue{}, false
	}
	d, err := As[schema.Dialogue](out, KindDialogue)
	return d, err == nil && d.Stage == stage
}

// QueryItem wraps a query; the item id is the query id.
func QueryItem(q schema.Query) (Item, error) { return NewItem(KindQuery, q.ID, q) }

// ProblemItem wraps a problem; the item id is the problem id.
func ProblemItem(p schema.Problem) (Item, error) { return NewItem(KindProblem, p.ID, p) }

// DialogueItem wraps a dialogue; the item id is the dialogue id.
func DialogueItem(d schema.Dialogue) (Item, error) { return NewItem(KindDialogue, d.ID, d) }

// RatingItem wraps a rating; its id combines query id and rubric so two
// rubrics' ratings of one query are distinct items.
func RatingItem(r schema.Rating) (Item, error) {
	return NewItem(KindRating, r.QueryID+"/"+r.Rubric, r)
}
