package schema

import "testing"

// Python's bare NaN and infinities become JSON strings; text inside
// strings, escaped quotes included, is left alone.
func TestFixPythonNonFinite(t *testing.T) {
	for _, c := range []struct {
		in, want string
		changed  bool
	}{
		{`[1, 2.5]`, `[1, 2.5]`, false},
		{`[NaN, -Infinity, Infinity]`, `["NaN", "-Infinity", "Infinity"]`, true},
		{`{"a": "NaN", "b": NaN}`, `{"a": "NaN", "b": "NaN"}`, true},
		{`["say \"NaN\" Infinity", Infinity]`, `["say \"NaN\" Infinity", "Infinity"]`, true},
		{`["a\\", NaN]`, `["a\\", "NaN"]`, true},
		{`["unclosed NaN`, `["unclosed NaN`, false},
	} {
		got, changed := fixPythonNonFinite([]byte(c.in))
		if string(got) != c.want || changed != c.changed {
			t.Errorf("fixPythonNonFinite(%s) = %s, %v; want %s, %v", c.in, got, changed, c.want, c.changed)
		}
	}
}
