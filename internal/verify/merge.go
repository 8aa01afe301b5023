package verify

import (
	"reflect"

	"github.com/codefeedback/codefeedback/schema"
)

// group is one distinct dialogue to verify: the longest of consecutive
// samples that are prefixes of one another. A turn-split export writes a
// dialogue's samples one after the other, each holding every turn before
// its target, so the longest holds every execution of all of them, in
// the order they ran; verifying it verifies each distinct execution once.
type group struct {
	d       *schema.Dialogue
	members []member // the samples covered, in file order
}

type member struct {
	id string
	n  int // messages
}

func newGroup(d *schema.Dialogue) *group {
	return &group{d: d, members: []member{{d.ID, len(d.Messages)}}}
}

// absorb adds d to the group when one of the two is a prefix of the other.
func (g *group) absorb(d *schema.Dialogue) bool {
	switch {
	case isPrefix(g.d.Messages, d.Messages):
		g.d = d
	case isPrefix(d.Messages, g.d.Messages):
	default:
		return false
	}
	g.members = append(g.members, member{d.ID, len(d.Messages)})
	return true
}

func isPrefix(a, b []schema.Message) bool {
	if len(a) == 0 || len(a) > len(b) {
		return false
	}
	for i := range a {
		if !sameMessage(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

func sameMessage(a, b *schema.Message) bool {
	return a.Role == b.Role && a.Content == b.Content &&
		reflect.DeepEqual(a.Exec, b.Exec) && reflect.DeepEqual(a.Feedback, b.Feedback)
}

// sampleFor is the id of the first sample of the group that shows turn.
func (g *group) sampleFor(turn int) string {
	for _, m := range g.members {
		if m.n > turn {
			return m.id
		}
	}
	return g.d.ID
}

// attribute names in each mismatch and unverifiable turn the first sample
// that shows it, where the group covers several.
func (g *group) attribute(rep *Report) {
	if len(g.members) == 1 {
		return
	}
	for i := range rep.Mismatches {
		if rep.Mismatches[i].DialogueID == g.d.ID {
			rep.Mismatches[i].DialogueID = g.sampleFor(rep.Mismatches[i].Turn)
		}
	}
	for i := range rep.Unverifiable {
		rep.Unverifiable[i].DialogueID = g.sampleFor(rep.Unverifiable[i].Turn)
	}
}

// roles checks the turn order of every sample of the group, each problem
// reported once, for the first sample that shows it.
func (g *group) roles() []Mismatch {
	var out []Mismatch
	seen := map[[2]any]bool{}
	for _, m := range g.members {
		if m.n > len(g.d.Messages) {
			continue
		}
		for _, mm := range Roles(&schema.Dialogue{ID: m.id, Messages: g.d.Messages[:m.n]}) {
			k := [2]any{mm.Turn, mm.Detail}
			if !seen[k] {
				seen[k] = true
				out = append(out, mm)
			}
		}
	}
	return out
}
