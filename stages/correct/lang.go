package correct

import (
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/internal/mutate"
	"github.com/codefeedback/codefeedback/schema"
)

// The model path works in every language the harness judges; the
// mutation path stays Python-only (its operators edit Python's syntax tree).

// langNames are the names the prompts and dialogues use.
var langNames = map[executors.Language]string{
	executors.Python: "Python", executors.JavaScript: "JavaScript", executors.TypeScript: "TypeScript",
	executors.C: "C", executors.CPP: "C++", executors.Go: "Go", executors.Java: "Java",
	executors.Rust: "Rust", executors.Ruby: "Ruby", executors.PHP: "PHP", executors.Lua: "Lua",
}

// checkedFirst are the languages whose compiler checks names and types
// before anything runs: a misspelled name or a wrong type there is a
// compile error (the syntax kind), never a name or type error at run time.
var checkedFirst = map[executors.Language]bool{
	executors.TypeScript: true, executors.C: true, executors.CPP: true,
	executors.Go: true, executors.Java: true, executors.Rust: true,
}

// languageOf is the language of p's code: its Language field, Python
// when empty. An unknown or unjudged language is an error.
func languageOf(p *schema.Problem) (executors.Language, error) {
	if strings.TrimSpace(p.Language) == "" {
		return executors.Python, nil
	}
	l, ok := executors.ParseLanguage(p.Language)
	if !ok || !harness.Judged(l) {
		return "", fmt.Errorf("correct: problem %s: no test harness for language %q", p.ID, p.Language)
	}
	return l, nil
}

func langName(l executors.Language) string {
	if n, ok := langNames[l]; ok {
		return n
	}
	return string(l)
}

// plantable reports whether the model path can plant a bug of kind in
// lang so that it fails as that kind: Python has the five kinds; other
// languages add runtime, and those checked before running lose name and
// type.
func plantable(lang executors.Language, kind mutate.Kind) bool {
	switch kind {
	case mutate.Syntax, mutate.Logic, mutate.Timeout:
		return true
	case mutate.Name, mutate.Type:
		return !checkedFirst[lang]
	case mutate.Runtime:
		return lang != executors.Python
	}
	return false
}

// exceptionKinds are the exception types that prove a name or type bug
// outside Python.
var exceptionKinds = map[executors.Language]map[string]mutate.Kind{
	executors.JavaScript: {"ReferenceError": mutate.Name, "TypeError": mutate.Type},
	executors.Ruby:       {"NameError": mutate.Name, "TypeError": mutate.Type},
	executors.PHP:        {"TypeError": mutate.Type},
}

// Kind is the bug kind r's first failure proves, or "" when none.
// Python's outcomes map as kindOf says; elsewhere a failed compile or
// parse is the syntax kind, an undefined name the name kind, a value of
// the wrong type the type kind, and any other exception, panic or
// crash while the tests run the runtime kind.
func (r judgedRun) Kind() mutate.Kind {
	if r.Lang == "" || r.Lang == executors.Python {
		return kindOf(r.Observed)
	}
	switch r.Observed {
	case observedPass, observedOther:
		return ""
	case observedWrongAnswer:
		return mutate.Logic
	case observedTimeout:
		return mutate.Timeout
	}
	if l := r.Verdict.Load; l != nil && l.Kind == harness.KindSyntax {
		return mutate.Syntax
	}
	if k, ok := exceptionKinds[r.Lang][r.Observed]; ok {
		return k
	}
	f, _ := firstFailure(r.Verdict)
	switch r.Lang {
	case executors.PHP:
		// PHP has no exception type for an undefined name (an Error for a
		// function, a warning for a variable); the message tells.
		if strings.HasPrefix(f.Message, "Call to undefined function") || strings.HasPrefix(f.Message, "Undefined variable") {
			return mutate.Name
		}
	case executors.Lua:
		// Lua's errors have no types; the message tells.
		switch {
		case strings.Contains(f.Message, "(global '"):
			return mutate.Name
		case strings.Contains(f.Message, "attempt to "):
			return mutate.Type
		}
	}
	return mutate.Runtime
}

// langHints tell the model what an error of each kind looks like outside
// Python.
func langHint(lang executors.Language, kind mutate.Kind) string {
	switch kind {
	case mutate.Syntax:
		if checkedFirst[lang] {
			return "a compile error, such as a missing semicolon or bracket, a misspelled or undeclared name, or a value of the wrong type, so that the code does not compile."
		}
		return "a syntax error, such as a missing bracket, keyword or delimiter, so that the code does not parse."
	case mutate.Name:
		return "a variable or function that is misspelled or never defined where it is used, so that the run fails when it is reached."
	case mutate.Type:
		return "an operation applied to a value of the wrong type at run time, such as calling a number or a method that the value's type lacks."
	case mutate.Logic:
		return "the code runs to the end without any error but returns a wrong result for at least one test (an off-by-one, a wrong comparison or operator)."
	case mutate.Runtime:
		return "the code " + map[bool]string{true: "compiles", false: "loads"}[checkedFirst[lang]] +
			" but fails with an exception, a panic or a crash on at least one test input (an index out of range, a null or nil dereference, a division by zero)."
	}
	return kindHints[kind]
}

func fence(lang executors.Language, code string) string {
	return "```" + string(lang) + "\n" + strings.TrimRight(code, "\n") + "\n```"
}

// sameCode reports whether two programs differ only in trailing spaces
// and blank lines.
func sameCode(a, b string) bool {
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(normalizeNewlines(s), "\n") {
			if l = strings.TrimRight(l, " \t"); l != "" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	return norm(a) == norm(b)
}
