package executors

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/codefeedback/codefeedback/internal/strlit"
)

// decodeResponse is json.Unmarshal(line, w) for the runner's answers. Most
// are flat objects (a session cell's result, a run's, a done line) whose
// values are strings, integers and booleans under the keys the runner
// writes: those are decoded here, without reflection, which was a fifth
// of the host's CPU for a session cell. Anything else (nested values, a
// key the runner does not write, a float, an escape this does not handle)
// goes to encoding/json, so that both always agree.
func decodeResponse(line []byte, w *wireResponse) error {
	var f wireResponse
	if decodeFlat(line, &f) {
		*w = f
		return nil
	}
	return json.Unmarshal(line, w)
}

// decodeFlat decodes a flat object into w; false means it could not.
func decodeFlat(b []byte, w *wireResponse) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		k := i + 1
		for k < len(b) && b[k] != '"' && b[k] != '\\' && b[k] >= 0x20 {
			k++
		}
		if k >= len(b) || b[k] != '"' {
			return false // a key with an escape: encoding/json's
		}
		key := b[i+1 : k]
		i = skipSpace(b, k+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}
		var ok bool
		switch c := b[i]; {
		case c == '"':
			var s string
			s, i, ok = scanString(b, i)
			ok = ok && w.setString(key, s)
		case c == 't' || c == 'f':
			v := c == 't'
			lit := "false"
			if v {
				lit = "true"
			}
			if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
				return false
			}
			i += len(lit)
			ok = w.setBool(key, v)
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && b[j] >= '0' && b[j] <= '9' {
				j++
			}
			var n int64
			n, ok = parseInt(b[i:j])
			i = j
			ok = ok && w.setInt(key, n, c == '-')
		default:
			return false // null, a nested value
		}
		if !ok {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// parseInt parses a JSON integer (no fraction or exponent, no leading
// zeros); false for anything else.
func parseInt(d []byte) (int64, bool) {
	digits := d
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseInt(string(d), 10, 64)
	return n, err == nil
}

// scanString decodes the JSON string at b[i] (its opening quote) and
// returns it and the index past its closing quote. False for what
// encoding/json would reject or read otherwise (raw control characters,
// invalid UTF-8, lone surrogates, unknown escapes).
func scanString(b []byte, i int) (string, int, bool) {
	j := i + 1
	for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j] >= 0x20 && b[j] < utf8.RuneSelf {
		j++
	}
	if j < len(b) && b[j] == '"' {
		return string(b[i+1 : j]), j + 1, true // plain ASCII: the common case
	}
	out := append(make([]byte, 0, j-i+16), b[i+1:j]...)
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			return string(out), j + 1, true
		case c < 0x20:
			return "", 0, false
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && size == 1 {
				return "", 0, false
			}
			out = append(out, b[j:j+size]...)
			j += size
		case c != '\\':
			out = append(out, c)
			j++
		default:
			if j+1 >= len(b) {
				return "", 0, false
			}
			esc := b[j+1]
			j += 2
			switch esc {
			case '"', '\\', '/':
				out = append(out, esc)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := strlit.Hex4(b, j)
				if !ok {
					return "", 0, false
				}
				j += 4
				if utf16.IsSurrogate(r) {
					if j+6 > len(b) || b[j] != '\\' || b[j+1] != 'u' {
						return "", 0, false
					}
					r2, ok := strlit.Hex4(b, j+2)
					if !ok {
						return "", 0, false
					}
					r = utf16.DecodeRune(r, r2)
					if r == utf8.RuneError {
						return "", 0, false
					}
					j += 6
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", 0, false
			}
		}
	}
	return "", 0, false
}

func (w *wireResponse) setString(key []byte, s string) bool {
	switch string(key) {
	case "stdout":
		w.Stdout = s
	case "stderr":
		w.Stderr = s
	case "signal":
		w.Signal = s
	case "error":
		w.Error = s
	case "time_limit":
		w.TimeLimit = s
	case "python":
		w.Python = s
	case "hash_seed":
		w.HashSeed = s
	case "taint":
		w.Taint = s
	case "phase":
		w.Phase = s
	default:
		return false
	}
	return true
}

func (w *wireResponse) setBool(key []byte, v bool) bool {
	switch string(key) {
	case "timed_out":
		w.TimedOut = v
	case "oom":
		w.OOM = v
	case "killed":
		w.Killed = v
	case "stdout_truncated":
		w.StdoutTruncated = v
	case "stderr_truncated":
		w.StderrTruncated = v
	case "ok":
		w.OK = v
	case "ready":
		w.Ready = v
	case "done":
		w.Done = v
	case "tainted":
		w.Tainted = v
	case "compile_cached":
		w.CompileCached = v
	case "missing_toolchain":
		w.MissingToolchain = v
	default:
		return false
	}
	return true
}

// setInt sets an integer field; neg: the literal had a sign ("-0" is
// no uint64 either).
func (w *wireResponse) setInt(key []byte, n int64, neg bool) bool {
	switch string(key) {
	case "id":
		if neg {
			return false
		}
		w.ID = uint64(n)
	case "exit_code":
		w.ExitCode = int(n)
	case "duration_ns":
		w.DurationNS = n
	case "compile_ns":
		w.CompileNS = n
	case "pid":
		w.PID = int(n)
	default:
		return false
	}
	return true
}
