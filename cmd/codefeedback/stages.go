package main

// The stages and services a pipeline file can name register themselves in
// init; importing them here is what makes `codefeedback run` know them.
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
