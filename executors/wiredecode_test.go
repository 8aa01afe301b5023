package executors

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestDecodeResponseAgreesWithEncodingJSON: decodeResponse gives what
// json.Unmarshal gives (the value, or an error) on the runner's lines and
// on random lines built to hit its edges: escapes python writes
// (\uXXXX for everything past ASCII, surrogate pairs), raw UTF-8, control
// characters, lone surrogates, leading zeros, floats, nulls, nested
// values, unknown and duplicate keys, keys in another case.
func TestDecodeResponseAgreesWithEncodingJSON(t *testing.T) {
	lines := []string{
		`{"id": 7, "exit_code": 0, "signal": "", "timed_out": false, "oom": false, "killed": false, "duration_ns": 50786, "stdout": "4\n", "stdout_truncated": false, "stderr": "", "stderr_truncated": false}`,
		`{"id": 3, "exit_code": 137, "signal": "SIGKILL", "timed_out": true, "time_limit": "cpu", "killed": true, "stderr": "[sandbox: \u00e9\ud83d\ude00]\n"}`,
		`{"id": 3, "done": true, "tainted": true, "taint": "left a file"}`,
		`{"ready": true, "pid": 1, "python": "3.11.2", "hash_seed": "0"}`,
		`{"id": 4, "ok": true, "langs": [{"lang": "c"}]}`,
		`{"id": 4, "artifact": {"a": "AAAA"}}`,
		`{"id": 5, "error": "bad request: x"}`,
		`{}`, ` { } `, `{"id": -1}`, `{"id": 01}`, `{"id": 1.5}`, `{"id": 1e3}`, `{"id": null}`, `{"ID": 9}`,
		`{"stdout": "a\"b\\c\/d\b\f\n\r\t"}`, `{"stdout": "\ud800"}`, `{"stdout": "\ud800x"}`, `{"stdout": "\udc00\ud800"}`,
		"{\"stdout\": \"raw\x01control\"}", "{\"stdout\": \"bad \xff utf8\"}", `{"stdout": "é raw"}`, `{"stdout": "\x"}`,
		`{"id": 1,}`, `{"id": 1 "ok": true}`, `{"id": 1}x`, `{"id": 1`, `{"id" 1}`, `["id"]`, ``, `{"id": 1, "id": 2}`,
		`{"id": 99999999999999999999}`, `{"exit_code": -2147483649}`, `{"timed_out": tru}`, `{"timed_out": 1}`, `{"stdout": 5}`,
	}
	r := rand.New(rand.NewPCG(37, 1))
	for range 3000 {
		lines = append(lines, randomLine(r))
	}
	flat := 0
	for _, line := range lines {
		if decodeFlat([]byte(line), &wireResponse{}) {
			flat++
		}
		for _, l := range []string{line, line + "\n"} {
			var got, want wireResponse
			gerr := decodeResponse([]byte(l), &got)
			werr := json.Unmarshal([]byte(l), &want)
			if (gerr == nil) != (werr == nil) || gerr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("line %q:\ngot  %+v, error %v\nwant %+v, error %v", l, got, gerr, want, werr)
			}
		}
	}
	// The comparison means something only if the fast path took part.
	if flat < len(lines)/10 {
		t.Errorf("the fast path decoded %d of %d lines, want at least a tenth", flat, len(lines))
	}
	t.Logf("fast path: %d of %d lines", flat, len(lines))
}

var lineKeys = []string{"id", "exit_code", "signal", "timed_out", "time_limit", "oom", "killed", "duration_ns",
	"stdout", "stdout_truncated", "stderr", "stderr_truncated", "done", "tainted", "taint", "ok", "error", "ready",
	"pid", "python", "hash_seed", "phase", "compile_ns", "compile_cached", "missing_toolchain", "Stdout", "other"}

func randomLine(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range r.IntN(6) {
		if i > 0 {
			b.WriteString([]string{", ", ",", " , "}[r.IntN(3)])
		}
		fmt.Fprintf(&b, "%q: ", lineKeys[r.IntN(len(lineKeys))])
		switch r.IntN(9) {
		case 0, 1, 2:
			b.WriteString(randomString(r))
		case 3:
			b.WriteString([]string{"true", "false", "null"}[r.IntN(3)])
		case 4:
			fmt.Fprintf(&b, "%d", r.Int64()>>r.IntN(64)*int64(1-2*r.IntN(2)))
		case 5:
			b.WriteString([]string{"0", "-0", "007", "1.0", "2e9", "-", "18446744073709551615", "9223372036854775808"}[r.IntN(8)])
		case 6:
			b.WriteString([]string{"[]", "{}", `{"a": 1}`, `[1, "x"]`}[r.IntN(4)])
		default:
			fmt.Fprintf(&b, "%d", r.IntN(300))
		}
	}
	b.WriteString("}")
	return b.String()
}

// randomString writes a JSON string as python's json.dumps would, or with
// raw UTF-8, or broken in one of the ways a decoder must refuse.
func randomString(r *rand.Rand) string {
	var b strings.Builder
	b.WriteByte('"')
	for range r.IntN(12) {
		switch r.IntN(12) {
		case 0:
			b.WriteString([]string{`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`}[r.IntN(8)])
		case 1:
			fmt.Fprintf(&b, `\u%04x`, r.IntN(0x10000)) // lone surrogates too
		case 2:
			c := 0x10000 + r.IntN(0x100000)
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(c-0x10000)>>10, 0xdc00+(c-0x10000)&0x3ff)
		case 3:
			b.WriteString([]string{"é", "😀", "\u2028", "\xff", "\x01", `\x`, `\u12`, `\uZZZZ`}[r.IntN(8)])
		default:
			b.WriteByte(byte(' ' + r.IntN(95)))
		}
	}
	if r.IntN(40) > 0 {
		b.WriteByte('"')
	}
	return b.String()
}

func BenchmarkDecodeResponse(b *testing.B) {
	line := []byte(`{"id": 5001, "exit_code": 0, "signal": "", "timed_out": false, "oom": false, "killed": false, "duration_ns": 50786, "stdout": "Coefficient of Determination (R-squared): 0.6\nCorrelation Coefficient: 3.8729833462074166\n", "stdout_truncated": false, "stderr": "", "stderr_truncated": false}` + "\n")
	for _, bc := range []struct {
		name string
		f    func([]byte, *wireResponse) error
	}{{"flat", decodeResponse}, {"encoding-json", func(l []byte, w *wireResponse) error { return json.Unmarshal(l, w) }}} {
		b.Run(bc.name, func(b *testing.B) {
			for range b.N {
				var w wireResponse
				if err := bc.f(line, &w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
