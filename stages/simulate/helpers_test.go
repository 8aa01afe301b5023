package simulate

import (
	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
)

func block(code string) string { return "```python\n" + code + "\n```" }
