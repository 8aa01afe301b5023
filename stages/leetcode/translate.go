package leetcode

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/strlit"
)

// Typed test translation for Java, C++, Go and Rust: a LeetCode assert's
// Python literals become literals of the types the candidate's own method
// signature declares (`int[] twoSum(int[] nums, int target)` makes
// `[2, 7]` a `new int[]{2, 7}`), so the call compiles and the expected
// value compares with the harness's equality. A test whose values do not
// fit the declared types (None, tuples, a list for an int) is left out.

// pyVal is a parsed Python literal.
type pyVal struct {
	kind  byte   // 'i' int, 'f' float, 's' str, 'b' bool, 'n' None, 'l' list
	text  string // number as written, string contents
	truth bool
	items []pyVal
}

// parsePyLiteral parses numbers, strings, booleans, None and lists.
func parsePyLiteral(s string) (pyVal, bool) {
	p := &pyParser{s: strings.TrimSpace(s)}
	v, ok := p.value()
	p.space()
	return v, ok && p.i == len(p.s)
}

// pyString reads the Python string literal whose opening quote is s[i]:
// its contents and the index after its closing quote. Escapes other than
// \n, \t, \\, \' and \" fail rather than be read wrong.
func pyString(s string, i int) (text string, end int, ok bool) {
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if j+1 >= len(s) {
				return "", 0, false
			}
			j++
			switch s[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '\\', '\'', '"':
				b.WriteByte(s[j])
			default:
				return "", 0, false
			}
		case s[i]:
			return b.String(), j + 1, true
		default:
			b.WriteByte(s[j])
		}
	}
	return "", 0, false
}

type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *pyParser) value() (pyVal, bool) {
	p.space()
	if p.i >= len(p.s) {
		return pyVal{}, false
	}
	c := p.s[p.i]
	switch {
	case c == '[':
		p.i++
		v := pyVal{kind: 'l'}
		for {
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ']' {
				p.i++
				return v, true
			}
			item, ok := p.value()
			if !ok {
				return pyVal{}, false
			}
			v.items = append(v.items, item)
			p.space()
			if p.i < len(p.s) && p.s[p.i] == ',' {
				p.i++
			} else if p.i >= len(p.s) || p.s[p.i] != ']' {
				return pyVal{}, false
			}
		}
	case c == '\'' || c == '"':
		text, end, ok := pyString(p.s, p.i)
		if !ok {
			return pyVal{}, false
		}
		p.i = end
		return pyVal{kind: 's', text: text}, true
	case c == '-' || c == '+' || c == '.' || c >= '0' && c <= '9':
		j := p.i + 1
		for j < len(p.s) && strings.IndexByte("0123456789.eE+-_", p.s[j]) >= 0 {
			if (p.s[j] == '+' || p.s[j] == '-') && p.s[j-1] != 'e' && p.s[j-1] != 'E' {
				break
			}
			j++
		}
		text := strings.ReplaceAll(p.s[p.i:j], "_", "")
		p.i = j
		if strings.ContainsAny(text, ".eE") {
			return pyVal{kind: 'f', text: text}, true
		}
		return pyVal{kind: 'i', text: strings.TrimPrefix(text, "+")}, true
	}
	for _, w := range []struct {
		word string
		v    pyVal
	}{{"True", pyVal{kind: 'b', truth: true}}, {"False", pyVal{kind: 'b'}}, {"None", pyVal{kind: 'n'}}} {
		if strings.HasPrefix(p.s[p.i:], w.word) {
			p.i += len(w.word)
			return w.v, true
		}
	}
	return pyVal{}, false
}

// typ is a declared type, reduced to what literals need.
type typ struct {
	kind  byte   // 'i' integer, 'f' float, 'b' bool, 's' string, 'c' char, 'l' list, 'v' void
	wide  bool   // a 64-bit integer where a literal needs a suffix (Java long)
	array bool   // Java: an array (else a List)
	raw   string // the type as written (C++ names a parameter's local with it)
	name  string // Java's element type name for arrays (int, String, ...)
	elem  *typ
}

var (
	reJavaGeneric = regexp.MustCompile(`^(?:java\.util\.)?(?:List|ArrayList|LinkedList|Collection)<(.*)>$`)
	reCppVector   = regexp.MustCompile(`^(?:std::)?vector<(.*)>$`)
	reRustVec     = regexp.MustCompile(`^Vec<(.*)>$`)
)

// scalars are the element types each language's translation handles, by
// their spelling; raw is filled in from the source.
var scalars = map[executors.Language]map[string]typ{
	executors.Java: kinds(map[byte][]string{
		'i': {"int", "Integer", "short", "byte"}, 'f': {"double", "Double", "float", "Float"},
		'b': {"boolean", "Boolean"}, 's': {"String"}, 'c': {"char", "Character"}, 'v': {"void"},
	}, map[string]typ{"long": {kind: 'i', wide: true}, "Long": {kind: 'i', wide: true}}),
	executors.CPP: kinds(map[byte][]string{
		'i': {"int", "long", "long long", "int64_t", "size_t", "unsigned", "short"}, 'f': {"double", "float"},
		'b': {"bool"}, 's': {"string", "std::string"}, 'c': {"char"}, 'v': {"void"},
	}, nil),
	executors.Go: kinds(map[byte][]string{
		'i': {"int", "int64", "int32", "uint", "uint64"}, 'f': {"float64", "float32"},
		'b': {"bool"}, 's': {"string"}, 'c': {"byte", "rune"}, 'v': {""},
	}, nil),
	executors.Rust: kinds(map[byte][]string{
		'i': {"i32", "i64", "usize", "u32", "u64", "isize"}, 'f': {"f64", "f32"},
		'b': {"bool"}, 's': {"String", "&str"}, 'c': {"char"}, 'v': {"", "()"},
	}, nil),
}

// kinds builds one language's scalars from its spellings by kind, plus the
// types that need more than a kind.
func kinds(by map[byte][]string, more map[string]typ) map[string]typ {
	m := map[string]typ{}
	for k, names := range by {
		for _, n := range names {
			m[n] = typ{kind: k}
		}
	}
	for n, t := range more {
		m[n] = t
	}
	return m
}

// parseType reads a type as written in lang; ok is false for anything the
// translation does not handle (maps, trees, lists of lists of pairs...).
func parseType(lang executors.Language, s string) (typ, bool) {
	s = strings.TrimSpace(s)
	raw := s
	var list []string // the element type, where s is a list
	switch lang {
	case executors.Java:
		if strings.HasSuffix(s, "[]") {
			e, ok := parseType(lang, strings.TrimSuffix(s, "[]"))
			if !ok || e.kind == 'v' {
				return typ{}, false
			}
			return typ{kind: 'l', array: true, raw: raw, name: strings.TrimSuffix(s, "[]"), elem: &e}, true
		}
		list = reJavaGeneric.FindStringSubmatch(s)
	case executors.CPP:
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(strings.TrimRight(s, "&* ")), "const "))
		raw = s
		list = reCppVector.FindStringSubmatch(s)
	case executors.Go:
		if e, ok := strings.CutPrefix(s, "[]"); ok {
			list = []string{s, e}
		}
	case executors.Rust:
		list = reRustVec.FindStringSubmatch(s)
	}
	if list != nil {
		e, ok := parseType(lang, list[1])
		return typ{kind: 'l', raw: raw, elem: &e}, ok && e.kind != 'v'
	}
	t, ok := scalars[lang][s]
	if ok && t.kind != 'v' {
		t.raw = raw
	}
	return t, ok
}

// param is a declared parameter.
type param struct {
	name string
	t    typ
}

// signature finds method's parameters and result type in code.
func signature(lang executors.Language, code, method string) (params []param, result typ, ok bool) {
	q := regexp.QuoteMeta(method)
	var re *regexp.Regexp
	switch lang {
	case executors.Java:
		re = regexp.MustCompile(`(?m)(?:^|[\s;{}])((?:[\w.]+(?:<[\w<>,\s.\[\]]*>)?(?:\[\])*))\s+` + q + `\s*\(([^)]*)\)`)
	case executors.CPP:
		re = regexp.MustCompile(`(?m)((?:const\s+)?[\w:]+(?:<[\w<>,\s:]*>)?\s*[&*]?)\s+` + q + `\s*\(([^)]*)\)`)
	case executors.Go:
		re = regexp.MustCompile(`(?m)^func\s+` + q + `\s*\(([^)]*)\)\s*([^{]*)\{`)
	case executors.Rust:
		re = regexp.MustCompile(`(?m)fn\s+` + q + `\s*\(([^)]*)\)\s*(?:->\s*([^{]+?))?\s*\{`)
	default:
		return nil, typ{}, false
	}
	m := re.FindStringSubmatch(code)
	if m == nil {
		return nil, typ{}, false
	}
	var resText, paramText string
	switch lang {
	case executors.Java, executors.CPP:
		resText, paramText = m[1], m[2]
	default:
		paramText, resText = m[1], m[2]
	}
	if result, ok = parseType(lang, resText); !ok {
		return nil, typ{}, false
	}
	var pending []string // Go: names waiting for a shared type ("a, b int")
	for _, p := range splitArgs(paramText) {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		var name, ts string
		switch lang {
		case executors.Java, executors.CPP:
			i := strings.LastIndexFunc(p, func(r rune) bool { return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_') })
			if i < 0 {
				return nil, typ{}, false
			}
			name, ts = p[i+1:], p[:i+1]
			ts = strings.TrimPrefix(strings.TrimSpace(ts), "final ")
		case executors.Go:
			f := strings.Fields(p)
			if len(f) == 1 {
				pending = append(pending, f[0])
				continue
			}
			name, ts = f[0], strings.Join(f[1:], "")
			t, good := parseType(lang, ts)
			if !good {
				return nil, typ{}, false
			}
			for _, n := range pending {
				params = append(params, param{name: n, t: t})
			}
			pending = nil
		case executors.Rust:
			n, t, found := strings.Cut(p, ":")
			if !found {
				return nil, typ{}, false // self
			}
			name, ts = strings.TrimPrefix(strings.TrimSpace(n), "mut "), strings.TrimSpace(t)
		}
		t, good := parseType(lang, ts)
		if !good || t.kind == 'v' {
			return nil, typ{}, false
		}
		params = append(params, param{name: name, t: t})
	}
	return params, result, len(pending) == 0
}

// literal writes v as a literal of type t in lang; top says whether it
// stands alone (Java arrays and C++/Go slices name their type only there).
func literal(lang executors.Language, t typ, v pyVal, top bool) (string, bool) {
	switch t.kind {
	case 'i':
		if v.kind != 'i' {
			return "", false
		}
		if lang == executors.Java && t.wide {
			return v.text + "L", true
		}
		return v.text, true
	case 'f':
		if v.kind != 'i' && v.kind != 'f' {
			return "", false
		}
		if v.kind == 'i' {
			return v.text + ".0", true
		}
		return v.text, true
	case 'b':
		if v.kind != 'b' {
			return "", false
		}
		return fmt.Sprint(v.truth), true
	case 's':
		if v.kind != 's' {
			return "", false
		}
		// Control bytes do not occur in LeetCode data; Java alone lacks \x.
		ctrl := strlit.Hex
		if lang == executors.Java {
			ctrl = strlit.Octal
		}
		q := strlit.DoubleQuoted(v.text, ctrl)
		switch {
		case lang == executors.Rust && t.raw == "String":
			return "String::from(" + q + ")", true
		case lang == executors.CPP && top:
			return "std::string(" + q + ")", true
		}
		return q, true
	case 'c':
		if v.kind != 's' || len(v.text) != 1 || v.text[0] < 0x20 || v.text[0] > 0x7e {
			return "", false
		}
		c := v.text
		if c == "'" || c == `\` {
			c = `\` + c
		}
		return "'" + c + "'", true
	case 'l':
		if v.kind != 'l' {
			return "", false
		}
		var items []string
		for _, it := range v.items {
			s, ok := literal(lang, *t.elem, it, false)
			if !ok {
				return "", false
			}
			items = append(items, s)
		}
		body := strings.Join(items, ", ")
		switch lang {
		case executors.Java:
			if t.array {
				if top {
					return "new " + t.name + "[]{" + body + "}", true
				}
				return "{" + body + "}", true
			}
			if len(items) == 0 {
				return "new java.util.ArrayList<" + boxed(*t.elem) + ">()", true
			}
			return "java.util.Arrays.asList(" + body + ")", true
		case executors.CPP:
			if top {
				return t.raw + "{" + body + "}", true
			}
			return "{" + body + "}", true
		case executors.Go:
			if top {
				return t.raw + "{" + body + "}", true
			}
			return "{" + body + "}", true
		case executors.Rust:
			return "vec![" + body + "]", true
		}
	}
	return "", false
}

// boxed is the Java class of an element type, for an empty List.
func boxed(t typ) string {
	switch t.raw {
	case "int":
		return "Integer"
	case "long":
		return "Long"
	case "double":
		return "Double"
	case "boolean":
		return "Boolean"
	case "char":
		return "Character"
	}
	return t.raw
}

// snakeCase is Rust's spelling of a LeetCode method name.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// typedTest translates one assert's arguments and expected value into a
// test in lang calling method; args hold (name, literal) pairs, names ""
// when positional.
func typedTest(lang executors.Language, method string, params []param, result typ, args [][2]string, want string) (string, bool) {
	if len(args) != len(params) || result.kind == 'v' {
		return "", false
	}
	// Keyword arguments are matched by name when every name is a
	// parameter's (Rust's in snake case); otherwise by position.
	order := make([]string, len(params))
	byName := true
	for _, a := range args {
		found := false
		for i, p := range params {
			if a[0] != "" && (a[0] == p.name || snakeCase(a[0]) == p.name) && order[i] == "" {
				order[i], found = a[1], true
				break
			}
		}
		if !found {
			byName = false
			break
		}
	}
	if !byName {
		for i, a := range args {
			order[i] = a[1]
		}
	}
	lits := make([]string, len(params))
	for i, p := range params {
		v, ok := parsePyLiteral(order[i])
		if !ok {
			return "", false
		}
		if lits[i], ok = literal(lang, p.t, v, true); !ok {
			return "", false
		}
	}
	wv, ok := parsePyLiteral(want)
	if !ok {
		return "", false
	}
	exp, ok := literal(lang, result, wv, true)
	if !ok {
		return "", false
	}
	switch lang {
	case executors.Java:
		return "assertEquals(new Solution()." + method + "(" + strings.Join(lits, ", ") + "), " + exp + ");", true
	case executors.CPP:
		// Parameters are often non-const references: the call gets locals.
		var decl []string
		var names []string
		for i, p := range params {
			decl = append(decl, fmt.Sprintf("%s cf_a%d = %s;", p.t.raw, i, lits[i]))
			names = append(names, fmt.Sprintf("cf_a%d", i))
		}
		return fmt.Sprintf("assert([&] { %s return Solution().%s(%s); }() == %s);", strings.Join(decl, " "), method, strings.Join(names, ", "), exp), true
	case executors.Go:
		return "assertEqual(" + method + "(" + strings.Join(lits, ", ") + "), " + exp + ")", true
	case executors.Rust:
		return "assert_eq!(Solution::" + snakeCase(method) + "(" + strings.Join(lits, ", ") + "), " + exp + ");", true
	}
	return "", false
}

// leetcodePrelude is what LeetCode's judge adds around a solution in lang
// (its implicit imports, Rust's Solution struct), without moving a line of
// the candidate: it goes on the first line or ends in #line 1.
func leetcodePrelude(lang executors.Language, code string) string {
	switch lang {
	case executors.Java:
		return "import java.util.*; "
	case executors.CPP:
		return "#include <bits/stdc++.h>\nusing namespace std;\n#line 1\n"
	case executors.Rust:
		if regexp.MustCompile(`\bimpl\s+Solution\b`).MatchString(code) && !regexp.MustCompile(`\bstruct\s+Solution\b`).MatchString(code) {
			return "#[allow(dead_code)] struct Solution; "
		}
	}
	return ""
}
