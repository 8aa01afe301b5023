package leak

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNameClasses holds the tokenizer's one-probe name table to the two
// sets it stands for, keepSet and keywords, on their own words, on their
// words changed by a byte and on random identifiers.
func TestNameClasses(t *testing.T) {
	want := func(w string) uint8 {
		switch h := fpHash(w); {
		case keywords.has(h):
			return nameKeyword
		case keepSet.has(h):
			return nameKept
		}
		return 0
	}
	fnv := func(w string) uint64 {
		h := uint64(14695981039346656037)
		for i := 0; i < len(w); i++ {
			h = (h ^ uint64(w[i])) * 1099511628211
		}
		return h
	}
	words := strings.Fields(`False None True and if in for return self sum str len print range x y foo
		result data i j n List defaultdict deque Exception cout endl`)
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
	for range 20000 {
		b := make([]byte, 1+rng.IntN(10))
		for k := range b {
			b[k] = letters[rng.IntN(len(letters)-10)]
		}
		words = append(words, string(b))
	}
	for _, w := range words[:30] {
		words = append(words, w+"s", "_"+w)
	}
	kept := 0
	for _, w := range words {
		if got, want := nameClasses.of(fnv(w)), want(w); got != want {
			t.Errorf("class of %q: got %d, want %d", w, got, want)
		}
		if want(w) != 0 {
			kept++
		}
	}
	if kept < 20 {
		t.Errorf("got %d kept words among the tested, want at least 20", kept)
	}
	if got := unfmix64(fmix64(0x123456789abcdef)); got != 0x123456789abcdef {
		t.Errorf("unfmix64(fmix64(x)) = %#x, want %#x", got, 0x123456789abcdef)
	}
}
