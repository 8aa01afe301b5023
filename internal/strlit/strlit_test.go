package strlit

import (
	"reflect"
	"strings"
	"testing"
)

func TestDoubleQuoted(t *testing.T) {
	for _, tc := range []struct {
		in, ctrl, want string
	}{
		{`say "hi"\`, Hex, `"say \"hi\"\\"`},
		{"a\nb\tc", Hex, `"a\nb\tc"`},
		{"\x01\x7f", Hex, `"\x01\x7f"`},
		{"\x01\r", Octal, `"\001\015"`},
		{"\r", Decimal, `"\013"`},
		{"naïve", Hex, `"naïve"`},
	} {
		if got := DoubleQuoted(tc.in, tc.ctrl); got != tc.want {
			t.Errorf("DoubleQuoted(%q, %q) = %s, want %s", tc.in, tc.ctrl, got, tc.want)
		}
	}
}

func TestHex4(t *testing.T) {
	for _, tc := range []struct {
		in   string
		at   int
		want rune
		ok   bool
	}{
		{"00e9", 0, 0xe9, true},
		{"\\uD83D", 2, 0xd83d, true},
		{"aBcD", 0, 0xabcd, true},
		{"ffff", 0, 0xffff, true},
		{"09AF", 0, 0x09af, true},
		{"12g4", 0, 0, false},
		{"123", 0, 0, false},
		{"x1234", 2, 0, false},
		{"12 4", 0, 0, false},
		{"/:@`", 0, 0, false},
	} {
		got, ok := Hex4([]byte(tc.in), tc.at)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Hex4(%q, %d) = %#x, %v; want %#x, %v", tc.in, tc.at, got, ok, tc.want, tc.ok)
		}
	}
}

func TestSplitTop(t *testing.T) {
	for _, tc := range []struct {
		in, sep string
		want    []string
	}{
		{"f(a, b), [1, 2], {k: 3}", ",", []string{"f(a, b)", " [1, 2]", " {k: 3}"}},
		{`"a,b", 'c,\',d', ` + "`e,f`", ",", []string{`"a,b"`, ` 'c,\',d'`, " `e,f`"}},
		{"x, ", ",", []string{"x", " "}},
		{"", ",", []string{""}},
		{"f(x) == g(y == z)", "==", []string{"f(x) ", " g(y == z)"}},
		{"a === b", "==", []string{"a === b"}},
		{"a !== b", "==", []string{"a !== b"}},
		{"a <== b", "==", []string{"a <== b"}},
		{"a === b", "===", []string{"a ", " b"}},
	} {
		if got := SplitTop(tc.in, tc.sep); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("SplitTop(%q, %q) = %q, want %q", tc.in, tc.sep, got, tc.want)
		}
	}
}

// Each case marks with | where the string opened by its first quote ends.
func TestJSONStringEnd(t *testing.T) {
	for _, c := range []string{
		`"ab"| x`,
		`x "a\"b"| y`,
		`"a\\"| "b"`, // an escaped backslash does not escape the quote
		`"a\\\"b"|`,  // an odd run does
		`"unclosed\"|`,
		`""|`,
	} {
		s, want := strings.Replace(c, "|", "", 1), strings.Index(c, "|")
		i := strings.IndexByte(s, '"')
		if got := JSONStringEnd(s, i); got != want {
			t.Errorf("JSONStringEnd(%q, %d) = %d, want %d", s, i, got, want)
		}
		if got := JSONStringEnd([]byte(s), i); got != want {
			t.Errorf("JSONStringEnd([]byte(%q), %d) = %d, want %d", s, i, got, want)
		}
	}
}
