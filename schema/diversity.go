package schema

import (
	"hash/maphash"
	"sort"
	"strings"
)

// Diversity counts how varied a corpus of dialogues reads: distinct first
// user turns, distinct closing turns, distinct code-less assistant turns,
// the share of dialogues built without a model (templates), and the most
// repeated openings of assistant turns. Texts are kept as 64-bit hashes;
// only the openings (the first words) are kept as text. Not safe for
// concurrent use.
type Diversity struct {
	dialogues, modelFree, codeless  int
	firstUser, closing, codelessSet map[uint64]struct{}
	openings                        map[string]int
}

// DiversitySummary is Diversity's figures.
type DiversitySummary struct {
	Dialogues         int       `json:"dialogues"`
	DistinctFirstUser int       `json:"distinct_first_user"`
	DistinctClosings  int       `json:"distinct_closings"`
	CodelessTurns     int       `json:"codeless_assistant_turns"`
	DistinctCodeless  int       `json:"distinct_codeless_assistant_turns"`
	TemplateShare     float64   `json:"template_share"` // dialogues made without a model
	TopOpenings       []Opening `json:"top_openings,omitempty"`
}

// Opening is the first words of assistant turns and how many turns begin so.
type Opening struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// hashSeed: the hashes only count distinct texts within one process.
var hashSeed = maphash.MakeSeed()

func hash64(s string) uint64 { return maphash.String(hashSeed, strings.TrimSpace(s)) }

// opening is the first six words of a turn's first line.
func opening(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	w := strings.Fields(line)
	if len(w) > 6 {
		w = w[:6]
	}
	return strings.Join(w, " ")
}

func hasFence(s string) bool { return strings.Contains(s, "```") || strings.Contains(s, "~~~") }

// Add counts one dialogue.
func (dv *Diversity) Add(d *Dialogue) {
	if dv.firstUser == nil {
		dv.firstUser, dv.closing, dv.codelessSet = map[uint64]struct{}{}, map[uint64]struct{}{}, map[uint64]struct{}{}
		dv.openings = map[string]int{}
	}
	dv.dialogues++
	if d.Model == "" {
		dv.modelFree++
	}
	firstUser, lastAssistant := true, ""
	for _, m := range d.Messages {
		switch m.Role {
		case RoleUser:
			if firstUser {
				dv.firstUser[hash64(m.Content)] = struct{}{}
				firstUser = false
			}
		case RoleAssistant:
			lastAssistant = m.Content
			if o := opening(m.Content); o != "" {
				dv.openings[o]++
			}
			if !hasFence(m.Content) {
				dv.codeless++
				dv.codelessSet[hash64(m.Content)] = struct{}{}
			}
		}
	}
	if lastAssistant != "" {
		dv.closing[hash64(lastAssistant)] = struct{}{}
	}
}

// Summary returns the figures with the top openings repeated at least twice.
func (dv *Diversity) Summary(top int) DiversitySummary {
	s := DiversitySummary{Dialogues: dv.dialogues, DistinctFirstUser: len(dv.firstUser), DistinctClosings: len(dv.closing),
		CodelessTurns: dv.codeless, DistinctCodeless: len(dv.codelessSet)}
	if dv.dialogues > 0 {
		s.TemplateShare = float64(dv.modelFree) / float64(dv.dialogues)
	}
	for t, n := range dv.openings {
		if n > 1 {
			s.TopOpenings = append(s.TopOpenings, Opening{t, n})
		}
	}
	sort.Slice(s.TopOpenings, func(i, j int) bool {
		a, b := s.TopOpenings[i], s.TopOpenings[j]
		return a.Count > b.Count || a.Count == b.Count && a.Text < b.Text
	})
	if len(s.TopOpenings) > top {
		s.TopOpenings = s.TopOpenings[:top]
	}
	return s
}
