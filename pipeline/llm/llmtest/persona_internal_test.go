package llmtest

import (
	"strings"
	"testing"

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
