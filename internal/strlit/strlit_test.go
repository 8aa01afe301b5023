package strlit

import "testing"

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
