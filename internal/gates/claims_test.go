package gates

import (
	"slices"
	"testing"
)

func TestEdgeClaims(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"the persona's plan", "To solve this I define `f` and keep its logic short: one pass over the input. Inputs at the edges, such as empty or single-element ones, go through the same path, so they need no special branch.\n\n```python\ndef f(l):\n    return l[0]\n```",
			[]string{"Inputs at the edges, such as empty or single-element ones, go through the same path, so they need no special branch."}},
		{"returns a value", "It returns 0 for an empty list.", []string{"It returns 0 for an empty list."}},
		{"handles edge cases", "This also handles edge cases.\nDone.", []string{"This also handles edge cases."}},
		{"a precondition", "It assumes the list is non-empty.", nil},
		{"an error on purpose", "An empty list raises a ValueError.", nil},
		{"says it does not", "It does not handle empty input.", nil},
		{"a question", "Should empty input return 0?", nil},
		{"inside code only", "Here it is.\n\n```python\n# works for empty lists too\ndef f(l):\n    return sum(l)\n```", nil},
		{"no claim", "The function sorts the list and returns its middle element.", nil},
	} {
		if got := EdgeClaims(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("%s: EdgeClaims = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestNamesSingleElement(t *testing.T) {
	for text, want := range map[string]bool{
		"Inputs at the edges, such as empty or single-element ones, go through the same path.": true,
		"A list of length 1 works too.":         true,
		"Empty lists return 0.":                 false,
		"A single pass over the input is made.": false,
	} {
		if got := NamesSingleElement(text); got != want {
			t.Errorf("NamesSingleElement(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestCutClaims(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"a sentence in a paragraph",
			"I define `f`: one pass. Inputs at the edges, such as empty ones, go through the same path, so they need no special branch.\n\n```python\ndef f(l):\n    return l[0]  # works for empty lists too.\n```\n\nSo `f` returns the first item.",
			"I define `f`: one pass.\n\n```python\ndef f(l):\n    return l[0]  # works for empty lists too.\n```\n\nSo `f` returns the first item."},
		{"a paragraph of claims only",
			"I define `f`.\n\nIt handles empty input.\n\n```python\ndef f(l):\n    return l[0]\n```",
			"I define `f`.\n\n```python\ndef f(l):\n    return l[0]\n```"},
		{"in the middle of a line",
			"First. It returns 0 for an empty list. Last.",
			"First. Last."},
	} {
		got := CutClaims(tc.text, EdgeClaims(tc.text))
		if got != tc.want {
			t.Errorf("%s: CutClaims =\n%q\nwant\n%q", tc.name, got, tc.want)
		}
		if left := EdgeClaims(got); len(left) > 0 {
			t.Errorf("%s: claims left after the cut: %q", tc.name, left)
		}
	}
}
