// Package builtin links in the stages and services a pipeline file can
// name. Each registers itself in its init, so a blank import of this
// package is what makes `codefeedback run`, and the tests that run the
// sample pipeline, know them all; a new stage adds its line here.
package builtin

import (
	_ "github.com/codefeedback/codefeedback/pipeline/embed"
	_ "github.com/codefeedback/codefeedback/pipeline/llm"
	_ "github.com/codefeedback/codefeedback/stages/audit"
	_ "github.com/codefeedback/codefeedback/stages/correct"
	_ "github.com/codefeedback/codefeedback/stages/explain"
	_ "github.com/codefeedback/codefeedback/stages/filter"
	_ "github.com/codefeedback/codefeedback/stages/interact"
	_ "github.com/codefeedback/codefeedback/stages/leetcode"
	_ "github.com/codefeedback/codefeedback/stages/pack"
	_ "github.com/codefeedback/codefeedback/stages/simulate"
)
