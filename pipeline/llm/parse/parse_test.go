package parse

import (
	"errors"
	"reflect"
	"testing"
)

func TestScore(t *testing.T) {
	cases := []struct {
		text string
		want int
		err  error
	}{
		{"Score: 4", 4, nil},
		{"score:4", 4, nil},
		{"**4**", 4, nil},
		{"4/5", 4, nil},
		{"I would rate it 4 out of 5.", 4, nil},
		{"Difficulty: 5 - because it needs dynamic programming.", 5, nil},
		{"I'd rate this a 3", 3, nil},
		{"I'd rate this a 3.", 3, nil},
		{"4", 4, nil},
		{"  2\n", 2, nil},
		{"3 - The answer is mostly correct but misses edge cases.", 3, nil},
		{"**Score:** 2\n\nThe code fails on empty input.", 2, nil},
		{"### Rating\n**Rating: 5**", 5, nil},
		{"Rating = 1", 1, nil},
		{"On a scale of 1 to 5, I'd give it a 4.", 4, nil},
		{"Using the scale (1-5): this deserves a **2**.", 2, nil},
		{"The query is clear. Complexity: 3/5", 3, nil},
		{"Score: 4/5 because the explanation is thorough.", 4, nil},
		{"Initial thoughts... the code has 2 bugs.\nFinal score: 1", 1, nil},
		{"Final rating is 5", 5, nil},
		{"Score: four", 4, nil},
		{"Quality: 4.0", 4, nil},
		{"Score: 3.6", 4, nil},
		{"The helpfulness score would be 2.", 2, nil},
		{"Score: 7", 0, ErrNoScore},                                  // out of range, nothing else
		{"The list has 10 items and 7/10 are sorted", 0, ErrNoScore}, // wrong denominator, out of range
		{"Here is a code:\n```python\nx = 4\n```\nNo rating.", 0, ErrNoScore},
		{"", 0, ErrEmpty},
		{"I'm sorry, but I can't help with that.", 0, ErrRefusal},
		{"This is a great question about sorting.", 0, ErrNoScore},
	}
	for _, c := range cases {
		got, err := Score(c.text, 1, 5)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Score(%q): got %d, %v; want error %v", c.text, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Score(%q): got %d, %v; want %d", c.text, got, err, c.want)
		}
	}
	if got, err := Score("Rating: 8/10", 1, 10); err != nil || got != 8 {
		t.Errorf("Score 1-10: got %d, %v; want 8", got, err)
	}
}

type feedback struct {
	Correct  bool   `json:"correct"`
	Feedback string `json:"feedback"`
	Score    int    `json:"score"`
}

func TestJSON(t *testing.T) {
	want := feedback{Correct: true, Feedback: "ok {not a brace}", Score: 4}
	cases := []string{
		`{"correct": true, "feedback": "ok {not a brace}", "score": 4}`,
		"```json\n{\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4}\n```",
		"Here is my evaluation:\n```json\n{\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4}\n```\nLet me know if you need more.",
		"Sure! {\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4} Hope this helps.",
		"```\n{\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4}\n```",
		"{\n  \"correct\": true,\n  \"feedback\": \"ok {not a brace}\",\n  \"score\": 4,\n}",
		"The result (see below) is:\n\n{\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4}\n\nNote: {braces} in prose.",
		"```python\nprint({1: 2})\n```\n```json\n{\"correct\": true, \"feedback\": \"ok {not a brace}\", \"score\": 4}\n```",
	}
	for _, text := range cases {
		var got feedback
		if err := JSON(text, &got); err != nil || got != want {
			t.Errorf("JSON(%q): got %+v, %v; want %+v", text, got, err, want)
		}
	}
	// Escaped quotes, brackets and ",}" inside a string neither end the
	// value nor lose their comma; the trailing comma outside goes.
	var quoted feedback
	if err := JSON(`Sure! {"feedback": "say \"a,}\" [{\\", "score": 4,} done`, &quoted); err != nil || quoted.Feedback != `say "a,}" [{\` || quoted.Score != 4 {
		t.Errorf("JSON with escapes in a string: got %+v, %v", quoted, err)
	}
	var list []int
	if err := JSON("The ids are [3, 1, 2].", &list); err != nil || !reflect.DeepEqual(list, []int{3, 1, 2}) {
		t.Errorf("JSON list: got %v, %v", list, err)
	}
	for _, bad := range []string{"no json here", `{"correct": tru`, "```json\n{\"correct\": \n```"} {
		var got feedback
		if err := JSON(bad, &got); !errors.Is(err, ErrNoJSON) {
			t.Errorf("JSON(%q): got %v, want ErrNoJSON", bad, err)
		}
	}
	var got feedback
	if err := JSON("```json\n```", &got); !errors.Is(err, ErrEmpty) {
		t.Errorf("JSON(empty fence): got %v, want ErrEmpty", err)
	}
	if err := JSON("As an AI language model, I cannot provide that.", &got); !errors.Is(err, ErrRefusal) {
		t.Errorf("JSON(refusal): got %v, want ErrRefusal", err)
	}
}

func TestCodeBlocks(t *testing.T) {
	text := "Here is the fix:\n\n```python\ndef f(x):\n    return x + 1\n```\n\nRun it:\n\n```bash\npython f.py\n```\n\n" +
		"Output:\n```\n2\n```\n1. In a list:\n   ```py\n   print(1)\n     nested = True\n   ```\nInline ```x``` is not a block.\n~~~sql\nSELECT 1;\n~~~\n```js\nconsole.log(1)"
	want := []Block{
		{Lang: "python", Code: "def f(x):\n    return x + 1"},
		{Lang: "bash", Code: "python f.py"},
		{Lang: "", Code: "2"},
		{Lang: "python", Code: "print(1)\n  nested = True"},
		{Lang: "sql", Code: "SELECT 1;"},
		{Lang: "javascript", Code: "console.log(1)", Unclosed: true},
	}
	if got := CodeBlocks(text); !reflect.DeepEqual(got, want) {
		t.Errorf("CodeBlocks:\ngot  %+v\nwant %+v", got, want)
	}
	codeCases := []struct {
		text, lang, want string
		err              error
	}{
		{text, "python", "def f(x):\n    return x + 1", nil},
		{text, "Python3", "def f(x):\n    return x + 1", nil},
		{text, "sh", "python f.py", nil},
		{"```\nx = 1\n```", "python", "x = 1", nil},      // unlabelled fallback
		{"```cpp\nint x;\n```", "python", "", ErrNoCode}, // wrong language only
		{"Just prose, no code.", "python", "", ErrNoCode},
		{"```python\n\n```", "python", "", ErrEmpty},
		{"I'm sorry, but I cannot assist with that request.", "python", "", ErrRefusal},
		{"```Python {linenos}\nprint(2)\n```", "python", "print(2)", nil},
		{"```python\r\nprint(3)\r\n```", "python", "print(3)", nil},
	}
	for _, c := range codeCases {
		got, err := Code(c.text, c.lang)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Code(%q, %q): got %q, %v; want %v", c.text, c.lang, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Code(%q, %q): got %q, %v; want %q", c.text, c.lang, got, err, c.want)
		}
	}
}

func TestRefusalAndEmpty(t *testing.T) {
	refusals := []string{
		"I'm sorry, but I can't help with that.",
		"I am sorry, but I cannot assist with this request.",
		"Sorry, I can't do that.",
		"I cannot help with creating malware.",
		"As an AI language model, I cannot provide personal opinions.",
		"Unfortunately, I am unable to complete this task.",
		"I'm sorry, but that request is against my guidelines.",
		"I won't write that code.",
	}
	answers := []string{
		"I'm sorry for the confusion. Here is the corrected code:\n```python\nprint(1)\n```",
		"I'm sorry, I made a mistake: the loop should start at 1.",
		"Sure, here's how to sort a list.",
		"The function cannot handle negative numbers; here is a fix.",
		"I can't believe how simple this is: use sorted().",
		"Score: 4",
	}
	for _, r := range refusals {
		if !IsRefusal(r) {
			t.Errorf("IsRefusal(%q): got false want true", r)
		}
	}
	for _, a := range answers {
		if IsRefusal(a) {
			t.Errorf("IsRefusal(%q): got true want false", a)
		}
	}
	for _, e := range []string{"", "  \n\t", "```\n```", "{}", "null", `""`, "..."} {
		if !IsEmpty(e) {
			t.Errorf("IsEmpty(%q): got false want true", e)
		}
	}
	for _, ne := range []string{"0", "ok", "```\nx\n```", `{"a":1}`} {
		if IsEmpty(ne) {
			t.Errorf("IsEmpty(%q): got true want false", ne)
		}
	}
}
