package explain

import "testing"

// TestExplainedByOwnProse: a turn whose prose before the code already
// explains it gets no second preface; a one-line lead-in or a transition
// does not count.
func TestExplainedByOwnProse(t *testing.T) {
	code := "```python\ndef count_vowels(word):\n    return sum(c in 'aeiou' for c in word)\n```"
	for _, tc := range []struct {
		name, prose string
		want        bool
	}{
		{"writer's plan", "To solve this I define `count_vowels` and keep it short: one pass over the word that counts each letter found in the vowel set, so empty words give 0.", true},
		{"one-line lead-in", "Here is the function `count_vowels`:", false},
		{"transition", "Good point. Here's the updated code, which now counts the vowels in the word with count_vowels and returns the total as before.", false},
		{"unrelated prose", "This is a classic problem that appears in many interview collections and textbooks, and there are many ways to approach it well.", false},
		{"no prose", "", false},
	} {
		if got := Explained(tc.prose+"\n\n"+code, 20); got != tc.want {
			t.Errorf("%s: Explained = %v, want %v", tc.name, got, tc.want)
		}
	}
}
