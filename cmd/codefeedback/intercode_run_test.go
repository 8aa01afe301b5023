package main

import (
	"strings"

	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
	openai "github.com/sashabaranov/go-openai"
)

// fakeAgentActions are the fake model's actions for the InterCode tasks of
// testdata/script/intercode_run.txtar, by a phrase of the task's query: the
// first answer is wrong, the next ones right (so Try Again succeeds at
// turn 2), except "never" tasks, always wrong.
var fakeAgentActions = map[string][2]string{
	"lines of /testbed/a.txt": {"```bash\ncat /testbed/missing.txt\n```", "```bash\nwc -l < /testbed/a.txt\n```"},
	"Remove /testbed/b.txt":   {"```bash\nls /testbed/missing\n```", "```bash\nrm /testbed/b.txt\n```"},
	"cost more than 10":       {"```sql\nSELECT name FROM item\n```", "```sql\nSELECT name FROM item WHERE price > 10\n```"},
	"never":                   {"```sql\nSELECT 1\n```", "```sql\nSELECT 1\n```"},
}

// fakeAgentReply answers an InterCode agent conversation (its system
// prompt starts "You are an agent working in"); ok is false for others.
func fakeAgentReply(msgs []openai.ChatCompletionMessage) (llmtest.Reply, bool) {
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0].Content, "You are an agent working in") {
		return llmtest.Reply{}, false
	}
	turn := 0
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleAssistant {
			turn++
		}
	}
	for phrase, acts := range fakeAgentActions {
		if strings.Contains(msgs[1].Content, phrase) {
			return llmtest.Reply{Text: "Let me try this.\n" + acts[min(turn, 1)]}, true
		}
	}
	return llmtest.Reply{Text: "I cannot tell which task this is."}, true
}
