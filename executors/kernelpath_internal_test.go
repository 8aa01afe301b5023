package executors

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDecodeReplace: the host decodes a cell's output as the runner did,
// with Python's bytes.decode("utf-8", "replace") (expected values printed
// by python3 3.11): one U+FFFD per maximal invalid subpart.
func TestDecodeReplace(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\xe4\xb8", "\ufffd"},
		{"a\xe4\xb8\xadb", "a中b"},
		{"\xff\xfe", "\ufffd\ufffd"},
		{"\xf0\x9f\x98", "\ufffd"},
		{"\xf0\x9f\x98\x80", "😀"},
		{"\xed\xa0\x80", "\ufffd\ufffd\ufffd"},
		{"\xe0\x80\x80", "\ufffd\ufffd\ufffd"},
		{"\xc0\xaf", "\ufffd\ufffd"},
		{"\xf4\x90\x80\x80", "\ufffd\ufffd\ufffd\ufffd"},
		{"x\x80y", "x\ufffdy"},
		{"\xe4\xb8\xe4\xb8\xad", "\ufffd中"},
	} {
		if got := decodeReplace([]byte(c.in)); got != c.want {
			t.Errorf("decodeReplace(%q): got %q, want %q", c.in, got, c.want)
		}
	}
}

// TestMarshalStrings: python3's marshal.loads reads the host's requests.
func TestMarshalStrings(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not installed")
	}
	for _, ss := range [][]string{
		{"<cell-1>", "x = 1\n"},
		{"<cell-12345>", ""},
		{"<cell-2>", strings.Repeat("print(1)\n", 40)},
		{"<cell-3>", "a\x00b\x7f"},
	} {
		cmd := exec.Command("python3", "-c", "import json, marshal, sys; print(json.dumps(marshal.loads(sys.stdin.buffer.read())))")
		cmd.Stdin = bytes.NewReader(marshalStrings(ss...))
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%q: %v", ss, err)
		}
		var got []string
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%q: python printed %q", ss, out)
		}
		if strings.Join(got, "\x01") != strings.Join(ss, "\x01") {
			t.Errorf("marshal.loads: got %q, want %q", got, ss)
		}
	}
}

// TestKernelStatus: exactly one well-formed status before the cell's end
// is trusted, as in the runner's kernel_status.
func TestKernelStatus(t *testing.T) {
	for _, c := range []struct {
		got    []string
		status string
		rc     int
	}{
		{[]string{"R 0"}, "ok", 0},
		{[]string{"R 137"}, "ok", 137},
		{[]string{"A"}, "ast", 0},
		{[]string{"T"}, "thread", 0},
		{nil, "tampered", 0},
		{[]string{"R 0", "R 0"}, "tampered", 0},
		{[]string{"R 0", "X"}, "tampered", 0},
		{[]string{"R -1"}, "tampered", 0},
		{[]string{"R +1"}, "tampered", 0},
		{[]string{"R 1000"}, "tampered", 0},
		{[]string{"R "}, "tampered", 0},
		{[]string{"X"}, "tampered", 0},
	} {
		var got [][]byte
		for _, m := range c.got {
			got = append(got, []byte(m))
		}
		if st, rc := kernelStatus(got); st != c.status || rc != c.rc {
			t.Errorf("kernelStatus(%q): got %s %d, want %s %d", c.got, st, rc, c.status, c.rc)
		}
	}
}

// TestUcredSpace: the status socket's control buffer holds the sender's
// credentials and nothing more (kernelProc.wait).
func TestUcredSpace(t *testing.T) {
	if got := unix.CmsgSpace(unix.SizeofUcred); got != 32 {
		t.Errorf("CmsgSpace(SizeofUcred): got %d, want 32 (kernelProc.wait's buffer)", got)
	}
}
