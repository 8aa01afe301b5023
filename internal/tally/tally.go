// Package tally renders count maps for messages and reports: largest count
// first, ties by key, so the same counts read the same on every run.
package tally

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Join renders m's entries largest count first (ties by key), each by
// format, a Printf format taking the key and the count ("%s (%d)"), joined
// by ", "; empty stands for an empty map.
func Join[V cmp.Ordered](m map[string]V, format, empty string) string {
	if len(m) == 0 {
		return empty
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(m[b], m[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf(format, k, m[k])
	}
	return strings.Join(parts, ", ")
}

// Common counts the elements two ascending slices share, as multisets, in
// one merge pass.
func Common[T cmp.Ordered](a, b []T) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}
