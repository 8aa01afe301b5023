package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/pipeline/llm/parse"
	"github.com/codefeedback/codefeedback/schema"
)

// prepareProgram takes a JSON list of [kind, source] items on stdin and
// prints one JSON list of answers: "compile" compiles the source ([ok,
// error]); "split" cuts a test block into its top-level statements as whole
// lines, the leading imports apart ([ok, [imports, tests]] or [false,
// error]).
const prepareProgram = `import ast, json, sys
out = []
for kind, src in json.load(sys.stdin):
    if kind == "compile":
        try:
            compile(src, "<block>", "exec")
            out.append([True, ""])
        except (SyntaxError, ValueError) as e:
            out.append([False, "%s: %s (line %s)" % (type(e).__name__, getattr(e, "msg", str(e)), getattr(e, "lineno", "?"))])
        continue
    try:
        tree = ast.parse(src)
    except (SyntaxError, ValueError) as e:
        out.append([False, "%s: %s" % (type(e).__name__, e)])
        continue
    lines = src.splitlines()
    imports, tests = [], []
    for st in tree.body:
        text = "\n".join(lines[st.lineno - 1:st.end_lineno])
        if isinstance(st, (ast.Import, ast.ImportFrom)) and not tests:
            imports.append(text)
        else:
            tests.append(text)
    out.append([True, ["\n".join(imports), tests]])
print(json.dumps(out))
`

// prepared is what the preparation run found for one dialogue.
type prepared struct {
	blocks     int
	mismatches []Mismatch
	tests      map[int]*visibleTests // by the user turn showing them
}

// prepare compiles the python blocks of every assistant turn of each
// dialogue and splits the tests their requests show, all in one sandbox
// run (one per window of dialogues, not one per dialogue: the run's start
// is most of its cost). Blocks of turns whose code is on record as not
// compiling are not held against the dialogue. IPython magics and shell
// escapes (lines starting with % or !) are blanked first.
func (c *Checker) prepare(ctx context.Context, ds []*schema.Dialogue) ([]prepared, error) {
	type ref struct {
		d, turn int
		tests   *visibleTests
	}
	var items [][2]string
	var refs []ref
	out := make([]prepared, len(ds))
	for di, d := range ds {
		skip := syntaxOnRecord(d)
		out[di].tests = map[int]*visibleTests{}
		for i, m := range d.Messages {
			if m.Role != schema.RoleAssistant {
				continue
			}
			if t := requestTests(d, i); t != nil && out[di].tests[t.turn] == nil {
				out[di].tests[t.turn] = t
				if parse.NormLang(t.lang) == "python" {
					items = append(items, [2]string{"split", t.src})
					refs = append(refs, ref{d: di, turn: t.turn, tests: t})
				} else {
					t.imports, t.tests = "", splitLines(t.src)
				}
			}
			if skip[i] {
				continue
			}
			for _, b := range parse.CodeBlocks(m.Content) {
				if b.Lang != "python" || b.Unclosed || strings.TrimSpace(b.Code) == "" {
					continue
				}
				items = append(items, [2]string{"compile", magicLineRe.ReplaceAllString(b.Code, "")})
				refs = append(refs, ref{d: di, turn: i})
				out[di].blocks++
			}
		}
	}
	if len(items) == 0 {
		return out, nil
	}
	in, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("verify: encode blocks: %w", err)
	}
	res, err := c.Exec.Run(ctx, executors.Request{Language: executors.Python, Code: prepareProgram, Stdin: string(in),
		Limits: executors.Limits{Timeout: 60 * time.Second, OutputBytes: 8 << 20}})
	if err != nil {
		return nil, fmt.Errorf("verify: compile blocks of %s: %w", ds[0].ID, err)
	}
	var got []json.RawMessage
	if !res.OK() || json.Unmarshal([]byte(strings.TrimSpace(res.Stdout)), &got) != nil || len(got) != len(items) {
		return nil, fmt.Errorf("verify: compile blocks of %s: the compiler run failed: %s", ds[0].ID, strings.TrimSpace(res.Stderr+res.ErrorLine))
	}
	for k, raw := range got {
		r := refs[k]
		var pair [2]json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil {
			return nil, fmt.Errorf("verify: compiler answer %d: %w", k, err)
		}
		var ok bool
		_ = json.Unmarshal(pair[0], &ok)
		if r.tests != nil {
			if !ok {
				_ = json.Unmarshal(pair[1], &r.tests.err)
				continue
			}
			var split [2]json.RawMessage
			if err := json.Unmarshal(pair[1], &split); err != nil {
				return nil, fmt.Errorf("verify: compiler answer %d: %w", k, err)
			}
			_ = json.Unmarshal(split[0], &r.tests.imports)
			_ = json.Unmarshal(split[1], &r.tests.tests)
			continue
		}
		if !ok {
			var msg string
			_ = json.Unmarshal(pair[1], &msg)
			out[r.d].mismatches = append(out[r.d].mismatches, Mismatch{DialogueID: ds[r.d].ID, Turn: r.turn, Check: CheckParse,
				Detail: "python block does not compile: " + msg})
		}
	}
	return out, nil
}

// splitLines is a non-Python test block's tests: one per non-blank line,
// as correct.TestSource writes them.
func splitLines(src string) []string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, " \t\r"))
		}
	}
	return out
}

// syntaxOnRecord lists the assistant turns whose code ran with a
// SyntaxError on record (their blocks are known not to compile).
func syntaxOnRecord(d *schema.Dialogue) map[int]bool {
	out := map[int]bool{}
	for i, m := range d.Messages {
		if !isExecution(m) {
			continue
		}
		syntax := isSyntax(shownException(m.Content))
		if e := m.Exec; e != nil {
			syntax = syntax || isSyntax(e.Exception) || isSyntax(exceptionIn(e.Stderr)) || isSyntax(exceptionIn(m.Content))
		}
		if syntax {
			if j := prevAssistant(d, i); j >= 0 {
				out[j] = true
			}
		}
	}
	return out
}
