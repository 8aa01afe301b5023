package simulate

import (
	"strings"

	openai "github.com/sashabaranov/go-openai"

	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
	"github.com/codefeedback/codefeedback/pipeline/llm/llmtest"
)

// role says which of the three model roles a request is for, from the
// prompts the simulator sends.
func role(c llmtest.Call) string {
	msgs := c.Request.Messages
	switch {
	case len(msgs) > 0 && msgs[0].Role == openai.ChatMessageRoleSystem:
		return "writer"
	case strings.Contains(c.LastUser(), "You play a demanding user"):
		return "feedback"
	case strings.Contains(c.LastUser(), "You check whether a piece of code"):
		return "judge"
	}
	return "unknown"
}

// writerTurn is the number of assistant answers already in a writer request
// (0 for the first answer).
func writerTurn(c llmtest.Call) int {
	n := 0
	for _, m := range c.Request.Messages {
		if m.Role == openai.ChatMessageRoleAssistant {
			n++
		}
	}
	return n
}

func block(code string) string { return "```python\n" + code + "\n```" }
