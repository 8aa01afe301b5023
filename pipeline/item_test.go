package pipeline

import (
	"testing"

	"github.com/codefeedback/codefeedback/schema"
)

// TestOwnDialogue: an Observer's own dialogues are told from dialogues of
// other stages and from other kinds.
func TestOwnDialogue(t *testing.T) {
	mine, _ := DialogueItem(schema.Dialogue{ID: "d1", Stage: "correct"})
	other, _ := DialogueItem(schema.Dialogue{ID: "d2", Stage: "simulate"})
	query, _ := QueryItem(schema.Query{ID: "q1", Text: "t"})
	for _, tc := range []struct {
		name string
		item Item
		want bool
	}{
		{"own dialogue", mine, true},
		{"another stage's dialogue", other, false},
		{"a query", query, false},
	} {
		d, got := OwnDialogue(tc.item, "correct")
		if got != tc.want || got && d.ID != "d1" {
			t.Errorf("%s: got %v (dialogue %q), want %v", tc.name, got, d.ID, tc.want)
		}
	}
}
