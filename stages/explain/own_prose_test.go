package explain

import (
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	"github.com/codefeedback/codefeedback/schema"
)

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

// TestFirstReplyWithoutPurpose: a first reply whose own prose walks
// through the code without saying what it is for gets a preface that
// says so; a later reply's own prose is enough.
func TestFirstReplyWithoutPurpose(t *testing.T) {
	code := "```python\ndef count_vowels(word):\n    return sum(c in 'aeiou' for c in word)\n```"
	structure := "To solve this I define `count_vowels` and keep its logic short: it computes the result directly, with no loop of its own, and returns it."
	_, c := fake(t, func(llmtest.Call) llmtest.Reply {
		return llmtest.Reply{Text: "`count_vowels` counts the vowels of a word: each letter found in the vowel set adds one to the sum."}
	})
	d := schema.Dialogue{ID: "dlg-p", Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Write a function to count the vowels in a word."},
		{Role: schema.RoleAssistant, Content: structure + "\n\n" + code},
		{Role: schema.RoleUser, Content: "Please keep it short."},
		{Role: schema.RoleAssistant, Content: structure + "\n\n" + code},
	}}
	got, rep := explainWith(t, c, 2, d)
	if rep.Turns != 1 || rep.Already != 1 {
		t.Errorf("got report %+v, want the first reply prefaced and the later one kept", rep)
	}
	if !strings.HasPrefix(got.Messages[1].Content, "`count_vowels` counts the vowels") {
		t.Errorf("first reply: got %q, want the preface that says what it is for", got.Messages[1].Content)
	}
}
