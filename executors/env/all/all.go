// Package all registers every InterCode environment and loader: import it
// for its side effects where environments are opened by name.
package all

import (
	_ "github.com/codefeedback/codefeedback/executors/env/bashenv" // bash and ctf
	_ "github.com/codefeedback/codefeedback/executors/env/pyenv"
	_ "github.com/codefeedback/codefeedback/executors/env/sqlenv"
)
