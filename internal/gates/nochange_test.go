package gates

import (
	"strings"
	"testing"
)

func TestKeepsForRequest(t *testing.T) {
	const (
		offTopic = "I added to `f` a docstring that states what it computes, as you asked. No code change is needed for the rest: the code already does what the task asks, and the checks below show it. The logic is unchanged, so the results for valid inputs stay the same and the earlier checks still pass.\n\n```python\ndef f(xs):\n    \"\"\"Return it.\"\"\"\n    return sum(xs)\n```"
		speed    = "I added to `f` a docstring on its cost, as you asked. No code change is needed for speed: it already makes a single pass over the input, so a faster version would have the same cost. The logic is unchanged."
	)
	for _, tc := range []struct {
		name, request, answer string
		want                  bool
	}{
		{"generic reason to a layout request", "It passes, though I want you to use a clearer layout for the condition in `f`.", offTopic, false},
		{"generic reason to an older-versions request", "Could you avoid features in `f` that older Python versions lack?", offTopic, false},
		{"speed reason to a memory request", "One thing I'd like changed: keep the memory `f` uses small for long inputs.", speed, false},
		{"generic reason to a recomputation request", "Before I use this, avoid recomputing values inside `f`, please.", offTopic, false},
		{"speed reason to a speed request", "Can you make `f` faster or lighter on memory for very large inputs, keeping the same results?", speed, true},
		{"memory reason", "Could you keep the memory `f` uses small for long inputs?",
			"No change is needed for memory: `f` keeps only single values as it goes, so it stays small however long the list is.\n\n```python\ndef f(xs):\n    return sum(xs)\n```", true},
		{"the reason in the next sentence", "Could you use a clearer layout for the condition in `f`?",
			"I would keep the code as it is. The condition `x > 0` is one comparison on one line.", true},
		{"layout reason", "Could you use a clearer layout for the condition in `f`?",
			"No change is needed for the layout of the condition: `n % 2 == 0` fits on one line.", true},
		{"older versions reason", "Avoid features in `f` that older Python versions lack.",
			"No change is needed: `f` uses no f-strings and nothing newer than Python 3.5.", true},
		{"recomputed values", "Could you avoid recomputing values inside `f`?",
			"I leave `f` unchanged because avoiding recomputed values would need another algorithm.", true},
		{"the topic only in the code", "Could you keep the memory `f` uses small?",
			"No change is needed.\n\n```python\n# memory: small\ndef f(xs):\n    return sum(xs)\n```", false},
		{"the topic only in a name", "Could you make `fast_sum` handle long lists with less memory?",
			"No change is needed: `fast_sum` already does what the task asks.", false},
		{"no reason at all", "Could you keep the memory `f` uses small?", "Here is the code again.", false},
		{"a request with no topic word", "Could you change `f`?", "No change is needed: it is already correct.", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := KeepsForRequest(tc.request, tc.answer); got != tc.want {
				t.Errorf("KeepsForRequest(%q, %q) = %v, want %v", tc.request, tc.answer, got, tc.want)
			}
		})
	}
}

func TestExplainsCode(t *testing.T) {
	const before = "def count_ways(n):\n    A = [0] * (n + 1)\n    for i in range(2, n + 1):\n        A[i] = A[i - 2] + 1\n    return A[n]"
	doc := func(d string) string {
		return strings.Replace(before, "def count_ways(n):\n", "def count_ways(n):\n    \"\"\""+d+"\"\"\"\n", 1)
	}
	for _, tc := range []struct {
		name, after string
		want        bool
	}{
		{"names the loop's range and the result", doc("How it works: it takes n, goes through range(2, n + 1) with i, then returns A[n]."), true},
		{"generic", doc("Build the result in steps: each intermediate value has a name, and the last one is returned."), false},
		{"generic 2", doc("Return the value the task describes, built step by step from the arguments."), false},
		{"a comment on what the table counts", strings.Replace(before, "    for i", "    # each entry of the table counts the ways up to its width\n    for i", 1), true},
		{"the loop in words", doc("Fills the table in one loop from the two widths before."), true},
		{"a comment that only praises", strings.Replace(before, "    for i", "    # This part is important and correct.\n    for i", 1), false},
		{"a comment on count_ways' steps", strings.Replace(before, "    for i", "    # count the ways for each width from the two before it\n    for i", 1), true},
		{"nothing added", before, false},
		{"a common word that is also a name", strings.Replace(doc("Build the result in steps."), "return A[n]", "result = A[n]\n    return result", 1), false},
		{"a short name written as code", doc("The answer is in `n`-th entry: it returns A[n]."), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ExplainsCode(before, tc.after); got != tc.want {
				t.Errorf("ExplainsCode(before, %q) = %v, want %v", tc.after, got, tc.want)
			}
		})
	}
}
