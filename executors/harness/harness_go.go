package harness

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	reGoPackage = regexp.MustCompile(`(?m)^package\s+main\b[^\n]*`)
	reGoMain    = regexp.MustCompile(`(?m)^func main\(\)`)
)

// buildGo: the judge's imports join the candidate's package clause on its
// own line (aliased, so they clash with nothing and no line moves); a main
// the candidate brings is renamed; the judge follows the candidate.
func buildGo(b *langBuild) string {
	code := reGoMain.ReplaceAllString(b.code, "func cfCandidateMain()")
	imports := `; import (cfFmt "fmt"; cfJSON "encoding/json"; cfOs "os"; cfReflect "reflect"; cfDebug "runtime/debug"; cfRegexp "regexp"; cfStrconv "strconv")`
	if loc := reGoPackage.FindStringIndex(code); loc != nil {
		code = code[:loc[1]] + imports + code[loc[1]:]
	} else {
		code = "package main" + imports + "\n" + code // the candidate's lines move by one
	}
	var w strings.Builder
	w.WriteString(code)
	fmt.Fprintf(&w, `
// codefeedback test judge
const cfMarker = %s
const cfCap = %d

type cfRes map[string]any

func cfRec(kind string, v any) {
	b, _ := cfJSON.Marshal(v)
	cfFmt.Fprintf(cfOs.Stdout, "%%s %%s %%s\n", cfMarker, kind, b)
}

func cfShow(v any) string {
	s := cfFmt.Sprintf("%%#v", v)
	if _, ok := v.(string); !ok {
		s = cfFmt.Sprintf("%%v", v)
	}
	if len(s) > cfCap {
		s = s[:cfCap] + "..."
	}
	return s
}

// cfEqual compares numbers by value whatever their types (an int result
// against an untyped constant), anything else deeply.
func cfEqual(a, e any) bool {
	if cfReflect.DeepEqual(a, e) {
		return true
	}
	av, ev := cfReflect.ValueOf(a), cfReflect.ValueOf(e)
	num := func(v cfReflect.Value) (float64, bool) {
		switch v.Kind() {
		case cfReflect.Int, cfReflect.Int8, cfReflect.Int16, cfReflect.Int32, cfReflect.Int64:
			return float64(v.Int()), true
		case cfReflect.Uint, cfReflect.Uint8, cfReflect.Uint16, cfReflect.Uint32, cfReflect.Uint64:
			return float64(v.Uint()), true
		case cfReflect.Float32, cfReflect.Float64:
			return v.Float(), true
		}
		return 0, false
	}
	x, ok1 := num(av)
	y, ok2 := num(ev)
	return ok1 && ok2 && x == y
}

func cfEq(input string, a, e any) cfRes {
	if cfEqual(a, e) {
		return cfRes{"kind": "pass"}
	}
	return cfRes{"kind": "wrong_answer", "input": input, "expected": cfShow(e), "actual": cfShow(a), "op": "=="}
}

func cfTrue(input string, c bool) cfRes {
	if c {
		return cfRes{"kind": "pass"}
	}
	return cfRes{"kind": "wrong_answer", "input": input, "expected": "true", "actual": "false", "op": "=="}
}

var cfLineRe = cfRegexp.MustCompile(`+"`"+`/main\.go:(\d+)`+"`"+`)

func cfLine(stack string) int {
	for _, m := range cfLineRe.FindAllStringSubmatch(stack, -1) {
		if n, _ := cfStrconv.Atoi(m[1]); n > 0 && n <= %d {
			return n
		}
	}
	return 0
}

func main() {
	cfOs.Stdout.WriteString(cfMarker + " plan " + %s + "\n")
	cfRec("load", cfRes{"ok": 1})
	cases := []func() cfRes{
`, jsonStr(b.marker), b.valueCap(), b.lines, jsonStr(b.planJSON()))
	b.writeCases(&w, caseForms{quote: jsonStr,
		eq:   "\t\tfunc() cfRes { return cfEq(%s, %s, %s) },\n",
		cond: "\t\tfunc() cfRes { return cfTrue(%s, %s) },\n",
		stmt: "\t\tfunc() cfRes { %s; return cfRes{\"kind\": \"pass\"} },\n"})
	w.WriteString(`	}
	for i, c := range cases {
		func() {
			defer func() {
				if r := recover(); r != nil {
					cfRec("case", cfRes{"i": i, "kind": "exception", "exception": "panic", "message": cfFmt.Sprint(r), "line": cfLine(string(cfDebug.Stack()))})
				}
			}()
			r := c()
			r["i"] = i
			cfRec("case", r)
		}()
	}
	cfRec("done", cfRes{"stdout": ""})
}
`)
	return w.String()
}
