package verify

import (
	"reflect"
	"slices"
	"strings"

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

// isPrefix reports whether the messages of a start those of b. The last
// message of a may be an assistant turn laid out differently with the same
// words and code: openai-tools moves a block the next turn runs into a tool
// call, which reads back at the end of the text, so a sample cut before
// that execution shows its own code where the next shows the call's.
func isPrefix(a, b []schema.Message) bool {
	if len(a) == 0 || len(a) > len(b) {
		return false
	}
	last := len(a) - 1
	for i := range a[:last] {
		if !sameMessage(&a[i], &b[i]) {
			return false
		}
	}
	x, y := &a[last], &b[last]
	return sameMessage(x, y) || (x.Role == schema.RoleAssistant && y.Role == schema.RoleAssistant &&
		x.Exec == nil && y.Exec == nil && sameWords(x.Content, y.Content))
}

// sameWords reports whether two texts hold the same prose (whitespace
// aside) and the same code blocks (in any order).
func sameWords(a, b string) bool {
	pa, ca := proseAndCode(a)
	pb, cb := proseAndCode(b)
	slices.Sort(ca)
	slices.Sort(cb)
	return pa == pb && slices.Equal(ca, cb)
}

func proseAndCode(text string) (string, []string) {
	var prose []string
	var code []string
	var cur *strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			if cur == nil {
				cur = &strings.Builder{}
				cur.WriteString(strings.TrimSpace(l) + "\n")
			} else {
				code = append(code, strings.TrimSpace(cur.String()))
				cur = nil
			}
			continue
		}
		if cur != nil {
			cur.WriteString(l + "\n")
		} else {
			prose = append(prose, strings.Fields(l)...)
		}
	}
	if cur != nil {
		code = append(code, strings.TrimSpace(cur.String()))
	}
	return strings.Join(prose, " "), code
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
