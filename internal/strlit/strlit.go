// Package strlit writes string literals for the C-like languages test
// harnesses and translated tests are written in (C, C++, Rust, Go, Java,
// JavaScript, TypeScript, Lua), reads JSON strings (the \uXXXX escapes
// the reflection-free decoders unescape, where a string ends), and splits
// expressions at separators outside their literals and brackets.
package strlit

import (
	"fmt"
	"strings"
)

// Control formats for DoubleQuoted: how a control byte is written.
const (
	// Hex is C's, C++'s, Rust's, Go's and JavaScript's \xHH.
	Hex = `\x%02x`
	// Octal is C's, Java's and Go's \ooo; Java has no \x, and its \uHHHH
	// is read before the lexer (\u000d would end the line).
	Octal = `\%03o`
	// Decimal is Lua's \ddd.
	Decimal = `\%03d`
)

// DoubleQuoted is a double-quoted literal of s: quote and backslash
// escaped, newline and tab as \n and \t, other control bytes (and DEL) in
// ctrl's format (a Printf verb for the byte: Hex, Octal, Decimal). Other
// bytes stand as they are, so UTF-8 text stays readable.
func DoubleQuoted(s, ctrl string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, ctrl, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Hex4 reads the four hex digits at b[i:] (a \uXXXX escape's, either
// case) as a UTF-16 code unit; false when fewer than four bytes remain or
// one is not a hex digit.
func Hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// JSONStringEnd returns the index just past the JSON string whose opening
// quote is s[i], or len(s) when it is not closed: a scan of JSON text can
// step over a string's contents, whatever they hold.
func JSONStringEnd[T string | []byte](s T, i int) int {
	esc := false
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; {
		case esc:
			esc = false
		case c == '\\':
			esc = true
		case c == '"':
			return j + 1
		}
	}
	return len(s)
}

// SplitTop splits s at sep where it stands outside brackets ((), [], {})
// and outside '...', "..." and `...` literals (a backslash escapes the
// next byte in them); it always returns at least one part. A sep of "=="
// does not split "===", "!==", "<==" or ">==".
func SplitTop(s, sep string) []string {
	var parts []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '"', '\'', '`':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		default:
			if depth == 0 && strings.HasPrefix(s[i:], sep) {
				if sep == "==" && ((i > 0 && strings.ContainsRune("=!<>", rune(s[i-1]))) || strings.HasPrefix(s[i+2:], "=")) {
					continue
				}
				parts = append(parts, s[start:i])
				start = i + len(sep)
				i += len(sep) - 1
			}
		}
	}
	return append(parts, s[start:])
}
