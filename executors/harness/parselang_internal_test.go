package harness

import (
	"testing"

	"github.com/codefeedback/codefeedback/executors"
)

// Each language's assertion calls split into actual and expected (equality)
// or a condition (boolean); anything else is a statement.
func TestParseLangTestForms(t *testing.T) {
	for _, c := range []struct {
		lang                         executors.Language
		src                          string
		actual, expected, cond, stmt string
	}{
		{lang: executors.TypeScript, src: "assert.equal(f(1), 2);", actual: "f(1)", expected: "2"},
		{lang: executors.TypeScript, src: "assert.ok(f(1) > 0);", cond: "f(1) > 0"},
		{lang: executors.JavaScript, src: "assert(g());", cond: "g()"},
		{lang: executors.Go, src: "assertTrue(ok(3))", cond: "ok(3)"},
		{lang: executors.Java, src: "assertTrue(S.ok(3));", cond: "S.ok(3)"},
		{lang: executors.Rust, src: "assert!(ok(3));", cond: "ok(3)"},
		{lang: executors.Ruby, src: "assert(ok?(3))", cond: "ok?(3)"},
		{lang: executors.Ruby, src: "assert_equal(f(1), 2)", actual: "f(1)", expected: "2"},
		{lang: executors.Go, src: "assertEqual(f(1), 2, 3)", stmt: "assertEqual(f(1), 2, 3)"},
		{lang: executors.Rust, src: "let x = 1;", stmt: "let x = 1;"},
	} {
		got := parseLangTest(c.lang, c.src)
		if got.Actual != c.actual || got.Expected != c.expected || got.Cond != c.cond || got.Stmt != c.stmt {
			t.Errorf("parseLangTest(%s, %q) = actual %q expected %q cond %q stmt %q; want %q %q %q %q",
				c.lang, c.src, got.Actual, got.Expected, got.Cond, got.Stmt, c.actual, c.expected, c.cond, c.stmt)
		}
	}
}
