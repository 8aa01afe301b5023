package llmtest

import (
	"fmt"
	"regexp"
	"strings"
)

// Asked to keep memory small, the persona makes the change where the
// function's own lines allow one it can state exactly: a list built only
// to be summed or searched becomes a generator, and dynamic-programming
// tables whose every step reads only the two entries before it become
// two variables each that roll forward.

var (
	// genRe: a list comprehension handed straight to a reduction.
	genRe = regexp.MustCompile(`\b(sum|max|min|any|all)\(\[([^\[\]]*\bfor\b[^\[\]]*)\]\)`)
	// tableRe: `A = [0] * (n + 1)`, a table of n + 1 entries.
	tableDefRe = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\s*=\s*\[([^\[\]]+)\]\s*\*\s*\(\s*([A-Za-z_]\w*)\s*\+\s*1\s*\)\s*$`)
	tableSetRe = regexp.MustCompile(`^[ \t]+([A-Za-z_]\w*)\[\s*([01])\s*\]\s*=\s*(.+?)\s*$`)
	dpLoopRe   = regexp.MustCompile(`^([ \t]+)for\s+([A-Za-z_]\w*)\s+in\s+range\(\s*2\s*,\s*([A-Za-z_]\w*)\s*\+\s*1\s*\)\s*:\s*$`)
	dpStepRe   = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*)\s*\]\s*=\s*(.+?)\s*$`)
	dpReturnRe = regexp.MustCompile(`^[ \t]+return\s+\(?\s*([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*)\s*\]\s*\)?\s*$`)
)

// lessMemory returns code with fn changed to use less memory, and what
// the change is; ok is false when neither change applies.
func lessMemory(code, fn string) (string, string, bool) {
	if out, ok := rollTables(code, fn); ok {
		return out, "rolling", true
	}
	if out, ok := rollGrid(code, fn); ok {
		return out, "grid", true
	}
	if genRe.MatchString(code) {
		return genRe.ReplaceAllString(code, "$1($2)"), "generator", true
	}
	if out, ok := iterOnce(code); ok {
		return out, "iterated", true
	}
	return "", "", false
}

// compAssignRe: a list comprehension given a name, on a line of its own.
var compAssignRe = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\s*=\s*\[([^\[\]]*\bfor\b[^\[\]]*)\]\s*$`)

// iterOnce turns a list comprehension that is named and then only gone
// through once by a for statement into a generator expression.
func iterOnce(code string) (string, bool) {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		m := compAssignRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		name := regexp.MustCompile(`\b` + regexp.QuoteMeta(m[2]) + `\b`)
		var uses []int
		for j := i + 1; j < len(lines); j++ {
			if name.MatchString(lines[j]) {
				uses = append(uses, j)
			}
		}
		if len(uses) != 1 || !regexp.MustCompile(`^\s*for\s+.+\s+in\s+`+regexp.QuoteMeta(m[2])+`\s*:\s*$`).MatchString(lines[uses[0]]) {
			continue
		}
		// inside a loop the list would be gone through again
		if ind := len(lines[uses[0]]) - len(strings.TrimLeft(lines[uses[0]], " \t")); ind != len(m[1]) {
			continue
		}
		out := append([]string{}, lines...)
		out[i] = m[1] + m[2] + " = (" + m[3] + ")"
		return strings.Join(out, "\n"), true
	}
	return "", false
}

// defSpan is the line of fn's last top-level one-line-header def in lines
// and the line after its indented body (blank lines included), or -1.
func defSpan(lines []string, fn string) (start, end int) {
	start = -1
	for i, l := range lines {
		if isDef(l, fn) && strings.HasSuffix(strings.TrimSpace(l), ":") {
			start = i
		}
	}
	if start < 0 {
		return -1, -1
	}
	end = start + 1
	for end < len(lines) && (strings.TrimSpace(lines[end]) == "" || strings.HasPrefix(lines[end], " ") || strings.HasPrefix(lines[end], "\t")) {
		end++
	}
	return start, end
}

// rollTables rewrites fn when its whole body is: tables of n + 1 entries,
// their entries 0 and 1 set, a loop over range(2, n + 1) whose every line
// sets one table's entry i from entries i - 1 and i - 2 only, and the
// return of one table's entry n.
func rollTables(code, fn string) (string, bool) {
	lines := strings.Split(code, "\n")
	start, end := defSpan(lines, fn)
	if start < 0 {
		return "", false
	}
	for end > start+1 && strings.TrimSpace(lines[end-1]) == "" {
		end-- // the blank lines after the function stay after it
	}
	var tables []string
	fill, first, second := map[string]string{}, map[string]string{}, map[string]string{}
	indent, n, iv, inner, ret := "", "", "", "", ""
	var steps [][2]string // table, expression
	loop, documented := false, false
	for _, l := range lines[start+1 : end] {
		t := strings.TrimSpace(l)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
		case !loop && len(tables) == 0 && len(t) >= 6 && strings.HasPrefix(t, `"""`) && strings.HasSuffix(t, `"""`):
			documented = true // said of the tables: written anew below
		case !loop && tableDefRe.MatchString(l):
			m := tableDefRe.FindStringSubmatch(l)
			if n != "" && m[4] != n {
				return "", false
			}
			indent, n = m[1], m[4]
			tables = append(tables, m[2])
			fill[m[2]] = strings.TrimSpace(m[3])
		case !loop && tableSetRe.MatchString(l):
			m := tableSetRe.FindStringSubmatch(l)
			if _, ok := fill[m[1]]; !ok {
				return "", false
			}
			map[string]map[string]string{"0": first, "1": second}[m[2]][m[1]] = m[3]
		case !loop && dpLoopRe.MatchString(l):
			m := dpLoopRe.FindStringSubmatch(l)
			if m[3] != n || len(tables) == 0 {
				return "", false
			}
			loop, iv = true, m[2]
		case loop && ret == "" && dpStepRe.MatchString(l) && len(dpStepRe.FindStringSubmatch(l)[1]) > len(indent):
			m := dpStepRe.FindStringSubmatch(l)
			if _, ok := fill[m[2]]; !ok || m[3] != iv {
				return "", false
			}
			inner = m[1]
			steps = append(steps, [2]string{m[2], m[4]})
		case loop && dpReturnRe.MatchString(l):
			m := dpReturnRe.FindStringSubmatch(l)
			if _, ok := fill[m[1]]; !ok || m[2] != n || len(steps) == 0 {
				return "", false
			}
			ret = m[1]
		default:
			return "", false
		}
	}
	if ret == "" || len(steps) != len(tables) {
		return "", false // a table the loop does not fill rolls nothing
	}
	stepped := map[string]bool{}
	for _, s := range steps {
		if stepped[s[0]] {
			return "", false
		}
		stepped[s[0]] = true
	}
	// Each step reads entries i - 1 and i - 2 only: the other entries of
	// a table are never read again.
	var news []string
	for _, s := range steps {
		expr := s[1]
		for _, tb := range tables {
			q := regexp.QuoteMeta(tb)
			expr = regexp.MustCompile(`\b`+q+`\[\s*`+iv+`\s*-\s*1\s*\]`).ReplaceAllString(expr, tb+"1")
			expr = regexp.MustCompile(`\b`+q+`\[\s*`+iv+`\s*-\s*2\s*\]`).ReplaceAllString(expr, tb+"2")
			if regexp.MustCompile(`\b` + q + `\[`).MatchString(expr) {
				return "", false
			}
		}
		news = append(news, expr)
	}
	out := append([]string{}, lines[:start+1]...)
	out = append(out, indent+"# "+joinNames(tables, "1")+": the entries i - 1 of the former tables; "+joinNames(tables, "2")+": the entries i - 2.")
	for _, tb := range tables {
		a, b := fill[tb], fill[tb]
		if v, ok := first[tb]; ok {
			a = v
		}
		if v, ok := second[tb]; ok {
			b = v
		}
		out = append(out, fmt.Sprintf("%s%s2, %s1 = %s, %s", indent, tb, tb, a, b))
	}
	out = append(out, fmt.Sprintf("%sfor %s in range(2, %s + 1):", indent, iv, n))
	var lhs []string
	for _, s := range steps {
		lhs = append(lhs, "new_"+s[0])
	}
	out = append(out, fmt.Sprintf("%s%s = %s", inner, strings.Join(lhs, ", "), strings.Join(news, ", ")))
	for _, s := range steps {
		out = append(out, fmt.Sprintf("%s%s2, %s1 = %s1, new_%s", inner, s[0], s[0], s[0], s[0]))
	}
	out = append(out, fmt.Sprintf("%sreturn %s1 if %s >= 1 else %s2", indent, ret, n, ret))
	out = append(out, lines[end:]...)
	rolled := strings.Join(out, "\n")
	if documented {
		rolled = addDocstring(rolled, fn, explainDoc(rolled, fn, true))
	}
	return rolled, true
}

// joinNames is "A1 and B1" for tables A and B and suffix "1".
func joinNames(tables []string, suffix string) string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t + suffix
	}
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

var (
	gridDefRe  = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\s*=\s*\[\[\s*([^\[\]]+?)\s+for\s+\w+\s+in\s+range\([^()]*\)\s*\]\s+for\s+\w+\s+in\s+range\([^()]*\)\s*\]\s*$`)
	gridSetRe  = regexp.MustCompile(`^[ \t]+([A-Za-z_]\w*)\[\s*0\s*\]\[\s*0\s*\]\s*=\s*(.+?)\s*$`)
	gridLoopRe = regexp.MustCompile(`^([ \t]+)for\s+([A-Za-z_]\w*)\s+in\s+range\(\s*1\s*,\s*([A-Za-z_]\w*)\s*\+\s*1\s*\)\s*:\s*$`)
	gridStepRe = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*|0)\s*\]\[\s*([A-Za-z_]\w*|0)\s*\]\s*=\s*(.+?)\s*$`)
	gridRetRe  = regexp.MustCompile(`^[ \t]+return\s+\(?\s*([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*)\s*\]\[\s*([A-Za-z_]\w*)\s*\]\s*\)?\s*;?\s*$`)
)

// rollGrid rewrites fn when its body fills a grid table the way a
// minimum-path table is filled: entry [0][0], the first column from the
// entry above, the first row from the entry to the left, then every other
// entry from the three above, to the left and diagonally, and returns
// entry [m][n]. Row i reads only row i - 1 and itself, so one row,
// updated left to right with the diagonal kept aside, gives the same
// values.
func rollGrid(code, fn string) (string, bool) {
	lines := strings.Split(code, "\n")
	start, end := defSpan(lines, fn)
	if start < 0 {
		return "", false
	}
	var body []string // the body's statements, with their line numbers
	var at []int
	for k := start + 1; k < end; k++ {
		if t := strings.TrimSpace(lines[k]); t != "" && !strings.HasPrefix(t, "#") {
			body, at = append(body, strings.TrimRight(lines[k], " \t")), append(at, k)
		}
	}
	if len(body) != 10 {
		return "", false
	}
	def := gridDefRe.FindStringSubmatch(body[0])
	set := gridSetRe.FindStringSubmatch(body[1])
	colLoop := gridLoopRe.FindStringSubmatch(body[2])
	col := gridStepRe.FindStringSubmatch(body[3])
	rowLoop := gridLoopRe.FindStringSubmatch(body[4])
	row := gridStepRe.FindStringSubmatch(body[5])
	outer := gridLoopRe.FindStringSubmatch(body[6])
	inner := gridLoopRe.FindStringSubmatch(body[7])
	step := gridStepRe.FindStringSubmatch(body[8])
	ret := gridRetRe.FindStringSubmatch(body[9])
	if def == nil || set == nil || colLoop == nil || col == nil || rowLoop == nil || row == nil || outer == nil || inner == nil || step == nil || ret == nil {
		return "", false
	}
	t, ind := def[2], def[1]
	i, m, j, n := outer[2], outer[3], inner[2], inner[3]
	if set[1] != t || col[2] != t || row[2] != t || step[2] != t || ret[1] != t ||
		colLoop[2] != i || colLoop[3] != m || col[3] != i || col[4] != "0" ||
		rowLoop[2] != j || rowLoop[3] != n || row[3] != "0" || row[4] != j ||
		step[3] != i || step[4] != j || ret[2] != m || ret[3] != n {
		return "", false
	}
	q := regexp.QuoteMeta(t)
	cell := func(a, b string) *regexp.Regexp {
		return regexp.MustCompile(q + `\[\s*` + a + `\s*\]\[\s*` + b + `\s*\]`)
	}
	minus := func(v string) string { return regexp.QuoteMeta(v) + `\s*-\s*1` }
	swap := func(expr string, pairs ...any) (string, bool) {
		for k := 0; k < len(pairs); k += 2 {
			expr = pairs[k].(*regexp.Regexp).ReplaceAllString(expr, pairs[k+1].(string))
		}
		return expr, !regexp.MustCompile(q + `\[`).MatchString(expr) // no other entry read
	}
	colExpr, ok1 := swap(col[5], cell(minus(i), "0"), "row[0]")
	rowExpr, ok2 := swap(row[5], cell("0", minus(j)), "row["+j+" - 1]")
	stepExpr, ok3 := swap(step[5], cell(minus(i), minus(j)), "diag", cell(minus(i), regexp.QuoteMeta(j)), "up", cell(regexp.QuoteMeta(i), minus(j)), "row["+j+" - 1]")
	if !ok1 || !ok2 || !ok3 {
		return "", false
	}
	in1, in2 := inner[1], step[1]
	out := append([]string{}, lines[:start+1]...)
	out = append(out,
		ind+"# row: row "+i+" of the former table "+t+", filled left to right; diag and up: the entries of row "+i+" - 1 to the upper left and above.",
		fmt.Sprintf("%srow = [%s] * (%s + 1)", ind, def[3], n),
		fmt.Sprintf("%srow[0] = %s", ind, set[2]),
		fmt.Sprintf("%sfor %s in range(1, %s + 1):", ind, j, n),
		fmt.Sprintf("%srow[%s] = %s", in1, j, rowExpr),
		fmt.Sprintf("%sfor %s in range(1, %s + 1):", ind, i, m),
		in1+"diag = row[0]",
		fmt.Sprintf("%srow[0] = %s", in1, colExpr),
		fmt.Sprintf("%sfor %s in range(1, %s + 1):", in1, j, n),
		fmt.Sprintf("%sup = row[%s]", in2, j),
		fmt.Sprintf("%srow[%s] = %s", in2, j, stepExpr),
		in2+"diag = up",
		fmt.Sprintf("%sreturn row[%s]", ind, n))
	out = append(out, lines[at[len(at)-1]+1:]...)
	return strings.Join(out, "\n"), true
}

var (
	countOuterRe = regexp.MustCompile(`^([ \t]+)for\s+([A-Za-z_]\w*)\s+in\s+range\(\s*(?:0\s*,\s*)?([A-Za-z_]\w*|len\(\s*[A-Za-z_]\w*\s*\))\s*\)\s*:\s*$`)
	countZeroRe  = regexp.MustCompile(`^([ \t]+)([A-Za-z_]\w*)\s*=\s*0\s*;?\s*$`)
	countIfRe    = regexp.MustCompile(`^[ \t]+if\s*\(?\s*([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*)\s*\]\s*==\s*([A-Za-z_]\w*)\[\s*([A-Za-z_]\w*)\s*\]\s*\)?\s*:\s*$`)
	countIncRe   = regexp.MustCompile(`^[ \t]+([A-Za-z_]\w*)\s*\+=\s*1\s*;?\s*$`)
)

// countOnce rewrites a loop inside a loop that counts, for each element
// of a list, how often it occurs in the whole list (get_Odd_Occurrence:
// `for j in range(n): if arr[i] == arr[j]: count += 1`): the counts are
// taken once, before the outer loop, with collections.Counter, and looked
// up. The time grows with the list instead of its square; every count is
// the same.
func countOnce(code, fn string) (string, bool) {
	lines := strings.Split(code, "\n")
	if !defines(code, fn) {
		return "", false
	}
	indent := func(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }
	for k := 0; k+4 < len(lines); k++ {
		outer := countOuterRe.FindStringSubmatch(strings.TrimRight(lines[k], " \t"))
		zero := countZeroRe.FindStringSubmatch(strings.TrimRight(lines[k+1], " \t"))
		inner := countOuterRe.FindStringSubmatch(strings.TrimRight(lines[k+2], " \t"))
		cond := countIfRe.FindStringSubmatch(strings.TrimRight(lines[k+3], " \t"))
		inc := countIncRe.FindStringSubmatch(strings.TrimRight(lines[k+4], " \t"))
		if outer == nil || zero == nil || inner == nil || cond == nil || inc == nil {
			continue
		}
		i, n, c, j := outer[2], outer[3], zero[2], inner[2]
		a := cond[1]
		if inner[3] != n || inc[1] != c || cond[3] != a || !(cond[2] == i && cond[4] == j || cond[2] == j && cond[4] == i) ||
			indent(lines[k+1]) <= indent(lines[k]) || indent(lines[k+3]) <= indent(lines[k+2]) || indent(lines[k+4]) <= indent(lines[k+3]) {
			continue
		}
		// the inner loop ends where the counting ends
		if k+5 < len(lines) && strings.TrimSpace(lines[k+5]) != "" && indent(lines[k+5]) > indent(lines[k+2]) {
			continue
		}
		if strings.Contains(code, "occurrences") {
			return "", false
		}
		over := a
		if strings.HasPrefix(n, "len(") {
			if strings.TrimSpace(n[4:len(n)-1]) != a {
				continue
			}
		} else {
			over = a + "[:" + n + "]"
		}
		out := append([]string{}, lines[:k]...)
		out = append(out,
			outer[1]+"# occurrences: how often each value of "+a+" occurs, counted once",
			outer[1]+"occurrences = Counter("+over+")",
			lines[k],
			zero[1]+c+" = occurrences["+a+"["+i+"]]")
		out = append(out, lines[k+5:]...)
		res := strings.Join(out, "\n")
		if !regexp.MustCompile(`(?m)^from collections import .*\bCounter\b`).MatchString(res) {
			res = "from collections import Counter\n" + res
		}
		return res, true
	}
	return "", false
}
