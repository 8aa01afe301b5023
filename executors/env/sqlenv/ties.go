package sqlenv

import (
	"strconv"
	"strings"
	"unicode"
)

// Ties. A gold that orders and then cuts (`ORDER BY count(*) DESC LIMIT 1`)
// names one answer where several rows share the sort key at the cut: which
// of them the engine returns is up to it and may change from run to run
// (Spider task 50 gave 315, 315, 516 on MariaDB). The set semantics allow
// any of them, so the reward accepts any answer that fills the cut's tied
// places with rows of the tied group: the gold runs once more without its
// LIMIT and with its sort keys as extra columns, and the rows whose keys tie
// across the cut are the group.

// limitQuery is a gold of the form SELECT list FROM ... ORDER BY keys
// LIMIT n [OFFSET m] at its top level.
type limitQuery struct {
	list   string   // the select list
	from   string   // from FROM up to LIMIT (the ORDER BY included)
	keys   []string // the ORDER BY expressions, without ASC/DESC
	limit  int
	offset int
}

// parseLimitQuery reads q as a limitQuery; ok is false for anything else
// (no top-level ORDER BY and LIMIT, a compound query, DISTINCT, a key that
// is a column position).
func parseLimitQuery(q string) (limitQuery, bool) {
	q = strings.TrimSpace(q)
	for strings.HasSuffix(q, ";") {
		q = strings.TrimSpace(strings.TrimSuffix(q, ";"))
	}
	words := topWords(q)
	sel, from, order, limit := -1, -1, -1, -1
	for i, w := range words {
		switch w.word {
		case "SELECT":
			if sel < 0 {
				sel = i
			}
		case "FROM":
			if from < 0 && sel >= 0 {
				from = i
			}
		case "ORDER":
			if i+1 < len(words) && words[i+1].word == "BY" {
				order = i
			}
		case "LIMIT":
			limit = i
		case "UNION", "INTERSECT", "EXCEPT":
			return limitQuery{}, false
		}
	}
	if sel != 0 || from < 0 || order < from || limit < order {
		return limitQuery{}, false
	}
	lq := limitQuery{
		list: strings.TrimSpace(q[words[sel].end:words[from].start]),
		from: strings.TrimSpace(q[words[from].start:words[limit].start]),
	}
	if l := strings.ToUpper(lq.list); strings.HasPrefix(l, "DISTINCT") || strings.HasPrefix(l, "ALL ") {
		return limitQuery{}, false
	}
	for _, k := range splitTopLevel(q[words[order+1].end:words[limit].start]) {
		k = strings.TrimSpace(k)
		u := strings.ToUpper(k)
		for _, d := range []string{" ASC", " DESC"} {
			if strings.HasSuffix(u, d) {
				k = strings.TrimSpace(k[:len(k)-len(d)])
				break
			}
		}
		if k == "" {
			return limitQuery{}, false
		}
		if _, err := strconv.Atoi(k); err == nil {
			return limitQuery{}, false // ORDER BY 1: a column position
		}
		lq.keys = append(lq.keys, k)
	}
	rest := strings.Fields(strings.ReplaceAll(q[words[limit].end:], ",", " , "))
	num := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0
	}
	var ok1, ok2 bool
	switch {
	case len(rest) == 1:
		lq.limit, ok1 = num(rest[0])
		ok2 = true
	case len(rest) == 3 && strings.EqualFold(rest[1], "OFFSET"):
		lq.limit, ok1 = num(rest[0])
		lq.offset, ok2 = num(rest[2])
	case len(rest) == 3 && rest[1] == ",":
		lq.offset, ok1 = num(rest[0])
		lq.limit, ok2 = num(rest[2])
	}
	if !ok1 || !ok2 || lq.limit == 0 || len(lq.keys) == 0 {
		return limitQuery{}, false
	}
	return lq, true
}

// keyed is the query that returns every row of the gold, uncut, with its
// sort keys after the select list's columns.
func (lq limitQuery) keyed() string {
	return "SELECT " + lq.list + ", " + strings.Join(lq.keys, ", ") + " " + lq.from
}

type topWord struct {
	word       string // upper case
	start, end int
}

// topWords lists the words of q outside parentheses, quotes and comments.
func topWords(q string) []topWord {
	var out []topWord
	depth := 0
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			j := i + 1
			for j < len(q) && q[j] != c {
				if q[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case c == '-' && i+1 < len(q) && q[i+1] == '-':
			for i < len(q) && q[i] != '\n' {
				i++
			}
		case isWordByte(c):
			j := i
			for j < len(q) && isWordByte(q[j]) {
				j++
			}
			if depth == 0 {
				out = append(out, topWord{strings.ToUpper(q[i:j]), i, j})
			}
			i = j
		default:
			i++
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

// tieSet is what the keyed gold says about the cut: the window's places
// whose rows tie with rows outside it, and the rows that may fill them.
type tieSet struct {
	window [][]any // the gold's rows in the window, uncut run (select list's columns)
	// groups: for each tied key, the window's places holding it and every
	// row (select list's columns) with that key.
	groups []tieGroup
}

type tieGroup struct {
	places []int
	rows   [][]any
}

// ties reads the keyed gold's rows (ncols select-list columns, then the
// keys) for a cut at lq's window; nil when no key at the window's edges is
// shared with a row outside it (the cut is unambiguous).
func ties(full [][]any, ncols int, lq limitQuery) *tieSet {
	if len(full) == 0 || ncols <= 0 {
		return nil
	}
	lo, hi := lq.offset, min(lq.offset+lq.limit, len(full))
	if lo >= hi {
		return nil
	}
	key := func(r []any) string {
		if len(r) < ncols {
			return ""
		}
		return RowKey(r[ncols:])
	}
	edge := map[string]bool{}
	if lo > 0 && key(full[lo-1]) == key(full[lo]) {
		edge[key(full[lo])] = true
	}
	if hi < len(full) && key(full[hi-1]) == key(full[hi]) {
		edge[key(full[hi-1])] = true
	}
	if len(edge) == 0 {
		return nil
	}
	ts := &tieSet{}
	byKey := map[string]*tieGroup{}
	var order []string
	for i, r := range full {
		k := key(r)
		row := r[:min(ncols, len(r))]
		if i >= lo && i < hi {
			ts.window = append(ts.window, row)
		}
		if !edge[k] {
			continue
		}
		g := byKey[k]
		if g == nil {
			g = &tieGroup{}
			byKey[k] = g
			order = append(order, k)
		}
		g.rows = append(g.rows, row)
		if i >= lo && i < hi {
			g.places = append(g.places, i-lo)
		}
	}
	for _, k := range order {
		ts.groups = append(ts.groups, *byKey[k])
	}
	return ts
}

// alternatives counts the answers the cut allows (capped at 1e6).
func (ts *tieSet) alternatives() int {
	n := 1
	for _, g := range ts.groups {
		n *= binom(len(g.rows), len(g.places))
		if n > 1e6 {
			return 1e6
		}
	}
	return n
}

func binom(n, k int) int {
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1e6 {
			return 1e6
		}
	}
	return r
}

// goldFor is the gold the agent's rows are scored against: the window with
// each tied group's places filled by the agent's own rows of that group
// (in the agent's order), as far as it has them, then by the group's
// other rows.
func (ts *tieSet) goldFor(agent [][]any) [][]any {
	out := make([][]any, len(ts.window))
	copy(out, ts.window)
	for _, g := range ts.groups {
		left := map[string]int{}
		for _, r := range g.rows {
			left[RowKey(r)]++
		}
		var pick [][]any
		for _, r := range agent {
			if k := RowKey(r); left[k] > 0 && len(pick) < len(g.places) {
				left[k]--
				pick = append(pick, r)
			}
		}
		for _, r := range g.rows {
			if k := RowKey(r); left[k] > 0 && len(pick) < len(g.places) {
				left[k]--
				pick = append(pick, r)
			}
		}
		for i, p := range g.places {
			out[p] = pick[i]
		}
	}
	return out
}
