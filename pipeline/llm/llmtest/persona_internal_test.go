package llmtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	openai "github.com/sashabaranov/go-openai"
)

// TestExplainCommand: the persona prefaces a shell command by the commands
// it runs and a query by the tables it reads, not as a Python function.
func TestExplainCommand(t *testing.T) {
	rules := "\n</reply>\nRules:\n- No fenced code blocks (no ``` or ~~~)."
	cases := []struct {
		reply      string
		want, bans []string
	}{
		{"<reply>\nOne step.\n\n```bash\ncut -d' ' -f1 /testbed/a.log | sort -u\n```" + rules, []string{"`cut`, `sort`"}, []string{"function", "returns"}},
		{"<reply>\n```sql\nSELECT a.name FROM author a JOIN book b ON b.author_id = a.id\n```" + rules, []string{"`author`, `book`", "query"}, []string{"function"}},
		{"<reply>\n```python\ndef add(a, b):\n    return a + b\n```" + rules, []string{"`add`"}, nil},
	}
	for _, c := range cases {
		call := Call{}
		call.Request.Messages = append(call.Request.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: c.reply})
		got := (&Persona{}).explain(call)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("preface %q lacks %q", got, w)
			}
		}
		for _, b := range c.bans {
			if strings.Contains(got, b) {
				t.Errorf("preface %q says %q", got, b)
			}
		}
	}
}

// TestRateIsShareOfAnswers: with a Rate, that share of answers misbehaves,
// each in one of the ways that fit it, however many ways are enabled.
func TestRateIsShareOfAnswers(t *testing.T) {
	p := &Persona{Bad: map[Misbehaviour]bool{WrongCategory: true, CodeInFeedback: true, UnparseableJSON: true}, Rate: 0.3}
	const n = 4000
	bad, by := 0, map[Misbehaviour]int{}
	for i := range n {
		call := Call{}
		call.Request.Messages = []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser,
			Content: "You play a demanding user. Aim your feedback at this goal: clarity. " + strings.Repeat("x", i)}}
		any := false
		for m := range p.Bad {
			if p.bad(m, call) {
				by[m]++
				if any {
					t.Fatalf("answer %d misbehaves in two ways", i)
				}
				any = true
			}
		}
		if any {
			bad++
		}
	}
	if r := float64(bad) / n; r < 0.27 || r > 0.33 {
		t.Errorf("%.3f of answers misbehave, want about 0.3", r)
	}
	for m := range p.Bad {
		if by[m] < n/20 {
			t.Errorf("%s shows in %d of %d answers, want about a third of the bad ones", m, by[m], n)
		}
	}
}

// TestExplainPython: every phrasing of a Python preface says what the
// code's lines do (its loop, what it returns, with a "%" of the code kept
// as it is), passes the preface gate, and none speaks of state or steps
// the code does not have.
func TestExplainPython(t *testing.T) {
	const code = "def is_undulating(n):\n    if (len(n) <= 2):\n        return False\n    for i in range(2, len(n)):\n        if (n[i - 2] % 10 != n[i]):\n            return False\n    return True"
	seen := map[string]bool{}
	for i := range 40 {
		call := Call{}
		call.Request.Messages = append(call.Request.Messages, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser,
			Content: "<reply>\n```python\n" + code + "\n```\n</reply>\nRules: " + strconv.Itoa(i)})
		got := (&Persona{}).explain(call)
		seen[got] = true
		if v := gates.Preface(got, code, 40); !v.OK() {
			t.Errorf("preface %q fails its gate: %s", got, v.Reason)
		}
		for _, hollow := range []string{"intermediate state", "general case first", "key step", "%!", "directly from its arguments"} {
			if strings.Contains(got, hollow) {
				t.Errorf("preface %q says %q", got, hollow)
			}
		}
		if !strings.Contains(got, "goes through its input once") {
			t.Errorf("preface %q does not say how it goes over its input", got)
		}
	}
	if len(seen) < 3 {
		t.Errorf("%d phrasings, want several: %v", len(seen), seen)
	}
}

func TestPurpose(t *testing.T) {
	for _, tc := range []struct{ request, want string }{
		{"Write a function to find the minimum cost path to reach (m, n) from (0, 0).", "`f` finds the minimum cost path to reach (m, n) from (0, 0)."},
		{"Write a python function to identify non-prime numbers.", "`f` identifies non-prime numbers."},
		{"Write a function that matches a word containing 'z'.", "`f` matches a word containing 'z'."},
		{"Write a function to match a string.", "`f` matches a string."},
		{"Reverse the list.", ""},
		{"Write a function of recursion list sum.\nYour code should pass these tests:", "`f` does what the task states: write a function of recursion list sum."},
		// the sample's own tasks: their purpose in their words, so the
		// product's no_purpose check does not send the preface back
		{"Implement an LRU cache class in Python with O(1) get and put.", "`f` is written for the task: implement an LRU cache class in Python with O(1) get and put."},
	} {
		if got := purpose(tc.request, "`f`"); got != tc.want {
			t.Errorf("purpose(%q) = %q, want %q", tc.request, got, tc.want)
		}
		if tc.want != "" && !gates.NamesPurpose(tc.want, tc.request) {
			t.Errorf("purpose(%q) = %q fails the product's check", tc.request, tc.want)
		}
		if got := purpose(tc.request, "the code"); tc.want != "" && !strings.HasPrefix(got, "The function ") {
			t.Errorf("purpose(%q) of unreadable code = %q, want it to open with \"The function\"", tc.request, got)
		}
	}
}

// TestExplainCommandTask: a shell preface says what the task asks in its
// words (explain's no_purpose check), and, told that the run fails and a
// later turn fixes it, names no command the fix may drop (presents_fault).
func TestExplainCommandTask(t *testing.T) {
	prompt := func(failed bool) string {
		p := "The user's latest request:\n\nCount the lines containing ERROR in /testbed/logs/app.log.\nDo it in a Bash shell.\n\nThe assistant's reply"
		if failed {
			p += "\nThe run after this reply failed"
		}
		return p
	}
	code := "ls /testbed/logs | grep ERROR"
	for _, failed := range []bool{false, true} {
		got := explainCommand("bash", code, prompt(failed))
		if !gates.NamesPurpose(got, "Count the lines containing ERROR in /testbed/logs/app.log.") {
			t.Errorf("failed=%v: %q names nothing of the task", failed, got)
		}
		if q := gates.FaultQuoted(got, code, "wc -l /testbed/logs/app.log\n"); failed && len(q) > 0 {
			t.Errorf("failed=%v: %q quotes %v, which the fix drops", failed, got, q)
		}
		if !failed && !strings.Contains(got, "`ls`") {
			t.Errorf("failed=%v: %q does not name the commands", failed, got)
		}
	}
}
