package harness

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sandboxtest"
	"github.com/codefeedback/codefeedback/schema"
)

// The precompiled judge and the compile-from-source fallback give the same
// verdicts.
func TestBytecodeAndSourcePaths(t *testing.T) {
	ctx := context.Background()
	ex := sandboxtest.Bwrap(t, "pool=1")
	code := judgeBytecode(ctx, ex)
	if len(code) == 0 {
		t.Fatalf("judgeBytecode = empty, want the judge compiled by the sandbox's Python")
	}
	p := schema.Problem{Query: schema.Query{ID: "t"}, Tests: []string{"assert f(2) == 4", "assert f(3) == 6"}}
	for _, files := range []map[string][]byte{nil, {bytecodeFile: code}, {bytecodeFile: []byte("not marshal data")}} {
		pr, err := Build(p, "def f(x):\n    return x * x\n", Options{})
		if err != nil {
			t.Fatal(err)
		}
		req := pr.Request()
		req.Files = files
		res, err := ex.Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		v := pr.Decode(res)
		if !v.Complete || v.PassedCount != 1 || v.Cases[1].Actual != "9" {
			t.Errorf("files %d bytes: complete=%v passed=%d case 1 actual=%q, want true, 1, \"9\"\n%s",
				len(files[bytecodeFile]), v.Complete, v.PassedCount, v.Cases[1].Actual, res.Stderr)
		}
	}
}
