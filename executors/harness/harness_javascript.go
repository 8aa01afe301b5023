package harness

import (
	"fmt"
	"strings"

	"github.com/codefeedback/codefeedback/executors"
)

// buildJS: the candidate, then an IIFE that runs each test in try/catch
// (TypeScript: the same code, typed any, checked by tsc).
func buildJS(b *langBuild) string {
	ts := b.lang == executors.TypeScript
	any := ""
	if ts {
		any = ": any"
	}
	var w strings.Builder
	w.WriteString(b.code)
	fmt.Fprintf(&w, "\n// codefeedback test judge\n;(function () {\nconst __cf_M = %s;\nconst __cf_util%s = require('util');\n", jsonStr(b.marker), any)
	fmt.Fprintf(&w, `const __cf_cap = %d;
function __cf_s(v%[2]s) { let s%[2]s; try { s = __cf_util.inspect(v, { depth: 6, breakLength: Infinity }); } catch (e) { s = String(v); } return s.length > __cf_cap ? s.slice(0, __cf_cap) + '...' : s; }
function __cf_rec(kind%[2]s, o%[2]s) { process.stdout.write(__cf_M + ' ' + kind + ' ' + JSON.stringify(o) + '\n'); }
function __cf_line(e%[2]s) { const re = /main\.js:(\d+)/g; let m%[2]s; const st = String((e && e.stack) || ''); while ((m = re.exec(st)) !== null) { const n = +m[1]; if (n <= %[3]d) return n; } return 0; }
`, b.valueCap(), any, b.lines)
	fmt.Fprintf(&w, "__cf_rec('plan', %s);\n__cf_rec('load', { ok: 1 });\nconst __cf_cases%s = [\n", b.planJSON(), any)
	for _, t := range b.tests {
		switch {
		case t.Actual != "":
			fmt.Fprintf(&w, "  () => { const a%[4]s = (%[1]s); const e%[4]s = (%[2]s); return __cf_util.isDeepStrictEqual(a, e) ? { kind: 'pass' } : { kind: 'wrong_answer', input: %[3]s, expected: __cf_s(e), actual: __cf_s(a), op: '==' }; },\n",
				t.Actual, t.Expected, jsonStr(t.Actual), any)
		case t.Cond != "":
			fmt.Fprintf(&w, "  () => ((%s) ? { kind: 'pass' } : { kind: 'wrong_answer', input: %s, expected: 'true', actual: 'false', op: '==' }),\n", t.Cond, jsonStr(t.Cond))
		default:
			fmt.Fprintf(&w, "  () => { %s; return { kind: 'pass' }; },\n", t.Stmt)
		}
	}
	fmt.Fprintf(&w, `];
for (let i = 0; i < __cf_cases.length; i++) {
  let r%[1]s;
  try { r = __cf_cases[i](); }
  catch (e%[1]s) { r = { kind: 'exception', exception: (e && e.name) || typeof e, message: String((e && e.message) !== undefined ? e.message : e), line: __cf_line(e) }; }
  r.i = i;
  __cf_rec('case', r);
}
__cf_rec('done', { stdout: '' });
})();
`, any)
	return w.String()
}
