package executors

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestParseTraceback(t *testing.T) {
	cases := []struct {
		name, stderr, exc, line string
	}{
		{"zero division", "Traceback (most recent call last):\n  File \"main.py\", line 3, in <module>\n    print(1/0)\n          ~^~\nZeroDivisionError: division by zero\n",
			"ZeroDivisionError", "ZeroDivisionError: division by zero"},
		{"syntax error without header", "  File \"main.py\", line 1\n    def f(:\n          ^\nSyntaxError: invalid syntax\n",
			"SyntaxError", "SyntaxError: invalid syntax"},
		{"indentation error", "  File \"main.py\", line 2\n    return 1\n    ^^^^^^\nIndentationError: expected an indented block after function definition on line 1\n",
			"IndentationError", "IndentationError: expected an indented block after function definition on line 1"},
		{"bare assertion", "Traceback (most recent call last):\n  File \"main.py\", line 1, in <module>\n    assert f(2) == 5\nAssertionError\n",
			"AssertionError", "AssertionError"},
		{"dotted module", "Traceback (most recent call last):\n  File \"/usr/lib/python3.11/json/decoder.py\", line 355, in raw_decode\n    raise JSONDecodeError(\"Expecting value\", s, err.value) from None\njson.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n",
			"json.decoder.JSONDecodeError", "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)"},
		{"chained: last wins", "Traceback (most recent call last):\n  File \"main.py\", line 2, in <module>\n    {}['k']\nKeyError: 'k'\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n  File \"main.py\", line 4, in <module>\n    raise ValueError('bad')\nValueError: bad\n",
			"ValueError", "ValueError: bad"},
		{"output before traceback", "warning: something\nTraceback (most recent call last):\n  File \"main.py\", line 1, in <module>\nNameError: name 'x' is not defined\n",
			"NameError", "NameError: name 'x' is not defined"},
		{"multi-line message", "Traceback (most recent call last):\n  File \"main.py\", line 1, in <module>\nValueError: first\nsecond line\n",
			"ValueError", "ValueError: first"},
		{"recursion", "Traceback (most recent call last):\n  File \"main.py\", line 1, in f\n  [Previous line repeated 996 more times]\nRecursionError: maximum recursion depth exceeded\n",
			"RecursionError", "RecursionError: maximum recursion depth exceeded"},
		{"no traceback", "just some stderr\n", "", ""},
		{"empty", "", "", ""},
		{"bash error", "main.sh: line 1: foo: command not found\n", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exc, line := ParseTraceback(c.stderr)
			if exc != c.exc || line != c.line {
				t.Errorf("got (%q, %q), want (%q, %q)", exc, line, c.exc, c.line)
			}
		})
	}
}

func TestParseOptions(t *testing.T) {
	u, _ := url.Parse("bwrap://?memory=256MiB&timeout=5s&pool=3&cpu=2&pids=10&output=1k&file=1MiB&nofile=64&disk=1G")
	o, err := ParseOptions(u, "disk")
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{Timeout: 5 * time.Second, MemoryBytes: 256 << 20, CPUTime: 2 * time.Second, Processes: 10, FileBytes: 1 << 20, OpenFiles: 64, OutputBytes: 1024}
	if o.Limits != want || o.Pool != 3 || o.Extra.Get("disk") != "1G" {
		t.Errorf("got %+v pool %d extra %v, want %+v pool 3 disk 1G", o.Limits, o.Pool, o.Extra, want)
	}
	for _, bad := range []string{"bwrap://?memory=lots", "bwrap://?timeout=-1s", "bwrap://?pool=0", "bwrap://?colour=red", "bwrap://?memory=-5"} {
		u, _ := url.Parse(bad)
		if _, err := ParseOptions(u); err == nil {
			t.Errorf("ParseOptions(%s): got no error", bad)
		}
	}
	u = &url.URL{Scheme: "docker", Host: "python:3.12-slim"}
	if o, _ := ParseOptions(u); o.Image != "python:3.12-slim" {
		t.Errorf("got image %q, want python:3.12-slim", o.Image)
	}
}

func TestParseBytes(t *testing.T) {
	cases := map[string]int64{"512MiB": 512 << 20, "64k": 64 << 10, "1G": 1 << 30, "1000": 1000, "2MB": 2000000, "10 KiB": 10 << 10}
	for in, want := range cases {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "MiB", "12parsecs", "0", "-1k"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q): got no error", bad)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	cases := []struct {
		req  Request
		want string
	}{
		{Request{Language: "cobol", Code: "x"}, "unknown language"},
		{Request{Language: Python}, "empty code"},
		{Request{Language: Bash, Code: "x", Limits: Limits{OutputBytes: -1}}, "negative output"},
		{Request{Language: SQL, Code: "x", Files: map[string][]byte{"a/../../b": nil}}, "bad file name"},
		{Request{Language: Python, Code: "x", Files: map[string][]byte{"ok/name.txt": nil}}, ""},
	}
	for _, c := range cases {
		err := c.req.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("Validate(%+v): got %v, want %q", c.req, err, c.want)
		}
	}
}

func TestOpenUnknownDriver(t *testing.T) {
	if _, err := Open(t.Context(), "nope://?pool=1"); err == nil || !strings.Contains(err.Error(), `unknown driver "nope"`) {
		t.Errorf("got %v, want unknown driver", err)
	}
}
