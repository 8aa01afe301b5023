package leak

import (
	"strings"
	"testing"
)

// A word's hash must not depend on its case, on what surrounds it (the
// eight-byte reads run past a word's end when the text goes on), or on
// where in the text it is; distinct words must hash apart.
func TestWordTokenHashes(t *testing.T) {
	words := []string{"a", "ab", "sum_of", "Digits", "exactly8", "nineChars", "sixteen_chars_xx", "seventeen_chars_x", "x1_", "_", "Straße", "größer", "naïve2"}
	contexts := []struct{ before, after string }{
		{"", ""}, {" ", " "}, {"(", ")"}, {"—", "—"}, {"1 + ", " - 2 and more text after it"}, {"\n", "\n"},
	}
	want := map[string]uint64{}
	for _, w := range words {
		toks := tokenize(w, nil)
		if len(toks) != 1 {
			t.Fatalf("%q: %d tokens, want 1", w, len(toks))
		}
		lw := strings.ToLower(w)
		for o, h := range want {
			if h == toks[0].hash && o != lw {
				t.Errorf("%q and %q hash alike", o, lw)
			}
		}
		want[lw] = toks[0].hash
	}
	for _, w := range words {
		for _, form := range []string{w, strings.ToUpper(w), strings.ToLower(w)} {
			for _, c := range contexts {
				text := c.before + form + c.after
				var got []uint64
				for _, tk := range tokenize(text, nil) {
					if strings.EqualFold(text[tk.start:tk.end], w) {
						got = append(got, tk.hash)
					}
				}
				if len(got) != 1 || got[0] != want[strings.ToLower(w)] {
					t.Errorf("%q in %q: hashes %x, want one %x", form, text, got, want[strings.ToLower(w)])
				}
			}
		}
	}
	// "_" lowercases to DEL inside the hash: it must not equal a word
	// with another byte there.
	if a, b := tokenize("a_b", nil)[0].hash, tokenize("a0b", nil)[0].hash; a == b {
		t.Error(`"a_b" and "a0b" hash alike`)
	}
}
