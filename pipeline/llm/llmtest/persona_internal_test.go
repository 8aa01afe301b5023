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
