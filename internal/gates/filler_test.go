package gates

import "testing"

func TestFiller(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"`f` goes through its input once; the answer is built from `xs` and returned, which is what the request asks for.", true},
		{"`f` keeps the name and arguments the task gives it, and its result is what the task asks for.", true},
		{"The run confirms it. It returns the value the task describes, so it can be used directly from other code.", true},
		{"The function applies the rule from the task to its arguments and hands back the result.", true},
		{"`f` sums the list in one loop and returns the total, 6 for the example.", false},
		{"I ask what the task asks for before writing code.", false},
		// code is not prose
		{"Here:\n\n```python\n# which is what the request asks for\nprint(1)\n```", false},
	} {
		if got := Filler(c.text) != ""; got != c.want {
			t.Errorf("Filler(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	text := "`f` adds one. Its result is what the task asks for.\n\n```python\nprint(1)\n```"
	if got, want := CutClaims(text, Fillers(text)), "`f` adds one.\n\n```python\nprint(1)\n```"; got != want {
		t.Errorf("cut: got %q, want %q", got, want)
	}
}
