package schema

import (
	"bytes"

	"github.com/codefeedback/codefeedback/internal/strlit"
)

// fixPythonNonFinite rewrites the bare NaN, Infinity and -Infinity tokens
// that Python's json module writes (EvalPlus MBPP+ inputs hold them) into the
// JSON strings "NaN", "Infinity" and "-Infinity", which standard JSON can
// carry. It reports whether anything changed. Text inside strings is never
// touched.
func fixPythonNonFinite(b []byte) ([]byte, bool) {
	var out []byte
	last := 0
	for i := 0; i < len(b); i++ {
		if b[i] == '"' {
			i = strlit.JSONStringEnd(b, i) - 1
			continue
		}
		for _, tok := range [][]byte{[]byte("-Infinity"), []byte("Infinity"), []byte("NaN")} {
			if bytes.HasPrefix(b[i:], tok) {
				out = append(out, b[last:i]...)
				out = append(out, '"')
				out = append(out, tok...)
				out = append(out, '"')
				i += len(tok) - 1
				last = i + 1
				break
			}
		}
	}
	if out == nil {
		return b, false
	}
	return append(out, b[last:]...), true
}
