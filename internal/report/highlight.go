package report

import (
	"html"
	"html/template"
	"strings"
	"unicode"
	"unicode/utf8"
)

// lang is what the highlighter knows of one language: its keywords, builtin
// names, how a comment starts and whether keywords ignore case.
type lang struct {
	keywords map[string]bool
	builtins map[string]bool
	comment  string // line comment start
	fold     bool   // keywords are case-insensitive (SQL)
	triple   bool   // ''' and """ strings (Python)
	vars     bool   // $NAME and ${...} (shell)
}

func set(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

var langs = map[string]*lang{
	"python": {
		keywords: set("False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case"),
		builtins: set("abs all any bool dict enumerate filter float int isinstance len list map max min open print range repr reversed round set sorted str sum tuple type zip ValueError TypeError KeyError IndexError NameError Exception AssertionError self"),
		comment:  "#", triple: true,
	},
	"bash": {
		keywords: set("if then else elif fi for while until do done case esac function in select return exit local export readonly declare"),
		builtins: set("echo printf cd ls cat grep sed awk cut sort uniq wc head tail find xargs mkdir rm cp mv touch chmod test read set unset source true false"),
		comment:  "#", vars: true,
	},
	"sql": {
		keywords: set("select from where and or not insert into values update set delete create table drop alter add primary key foreign references join inner left right outer full on group by order having limit offset as distinct union all exists in is null like between case when then else end with index view count sum avg min max asc desc integer text varchar real"),
		comment:  "--", fold: true,
	},
}

// langAliases maps a fenced block's info string to a known language.
var langAliases = map[string]string{
	"python": "python", "py": "python", "python3": "python", "py3": "python",
	"bash": "bash", "sh": "bash", "shell": "bash", "zsh": "bash", "console": "bash",
	"sql": "sql", "sqlite": "sql", "mysql": "sql", "postgresql": "sql",
}

// Highlight renders code as escaped HTML with <span class="k|b|s|c|n"> around
// keywords, builtins, strings, comments and numbers. An unknown language is
// only escaped. The result is safe to insert into HTML: every piece of the
// input goes through html.EscapeString.
func Highlight(code, language string) template.HTML {
	l := langs[langAliases[strings.ToLower(strings.TrimSpace(language))]]
	if l == nil {
		return template.HTML(html.EscapeString(code))
	}
	var b strings.Builder
	span := func(class, text string) {
		b.WriteString(`<span class="` + class + `">`)
		b.WriteString(html.EscapeString(text))
		b.WriteString("</span>")
	}
	i := 0
	for i < len(code) {
		c := code[i]
		switch {
		case strings.HasPrefix(code[i:], l.comment):
			j := strings.IndexByte(code[i:], '\n')
			if j < 0 {
				j = len(code) - i
			}
			span("c", code[i:i+j])
			i += j
		case c == '"' || c == '\'' || (c == '`' && l.vars):
			j := stringEnd(code, i, l.triple)
			span("s", code[i:j])
			i = j
		case l.vars && c == '$' && i+1 < len(code):
			j := i + 1
			if code[j] == '{' {
				if k := strings.IndexByte(code[j:], '}'); k >= 0 {
					j += k + 1
				}
			} else {
				for j < len(code) && (isWord(code[j]) || (j == i+1 && strings.IndexByte("?#@*!$", code[j]) >= 0)) {
					j++
				}
			}
			if j == i+1 {
				b.WriteString("$")
				i++
				continue
			}
			span("b", code[i:j])
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(code) && (isWord(code[j]) || code[j] == '.') {
				j++
			}
			span("n", code[i:j])
			i = j
		case isWordStart(code, i):
			j := i
			for j < len(code) && (isWord(code[j]) || code[j] >= utf8.RuneSelf) {
				_, n := utf8.DecodeRuneInString(code[j:])
				j += n
			}
			w := code[i:j]
			key := w
			if l.fold {
				key = strings.ToLower(w)
			}
			// A Python string prefix (f"", rb'') belongs to the string.
			if l.triple && j < len(code) && (code[j] == '"' || code[j] == '\'') && len(w) <= 2 && strings.Trim(strings.ToLower(w), "rbfu") == "" {
				k := stringEnd(code, j, true)
				span("s", code[i:k])
				i = k
				continue
			}
			switch {
			case l.keywords[key]:
				span("k", w)
			case l.builtins[key]:
				span("b", w)
			default:
				b.WriteString(html.EscapeString(w))
			}
			i = j
		default:
			_, n := utf8.DecodeRuneInString(code[i:])
			b.WriteString(html.EscapeString(code[i : i+n]))
			i += n
		}
	}
	return template.HTML(b.String())
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isWordStart(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return r == '_' || unicode.IsLetter(r)
}

// stringEnd returns the index just past the string literal starting at i
// (quote at s[i]); an unterminated single-line string ends at the newline, a
// triple-quoted one at the end of the text.
func stringEnd(s string, i int, triple bool) int {
	q := s[i]
	if triple && strings.HasPrefix(s[i:], strings.Repeat(string(q), 3)) {
		end := strings.Index(s[i+3:], strings.Repeat(string(q), 3))
		if end < 0 {
			return len(s)
		}
		return i + 3 + end + 3
	}
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1
		case '\n':
			if q != '`' {
				return j
			}
		}
	}
	return len(s)
}
