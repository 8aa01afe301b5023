package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// TestExecCommand runs programs in each language through the bwrap driver
// as `codefeedback exec` does, with its files, exit codes and JSON output.
func TestExecCommand(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap not installed")
	}
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	db := filepath.Join(dir, "people.db")
	sqlite, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 not installed (needed to build the test database)")
	}
	if out, err := exec.Command(sqlite, db, "create table u(name text, age int); insert into u values('ann', 31), ('bob', 27);").CombinedOutput(); err != nil {
		t.Fatalf("sqlite3: %v: %s", err, out)
	}
	data := write("data.txt", "from the host\n")
	cases := []struct {
		name       string
		o          execOptions
		code       string
		wantStdout string
		wantExit   int // 0: no error
	}{
		{"python", execOptions{Lang: "python"}, "print(sum(range(10)))", "45\n", 0},
		{"python exception", execOptions{Lang: "python"}, "raise KeyError('k')", "", 1},
		{"bash exit status", execOptions{Lang: "bash"}, "echo hi; exit 3", "hi\n", 3},
		{"sql on --db", execOptions{Lang: "sql", DB: db}, "select name from u where age > 30;", "name\n----\nann\n(1 row)\n", 0},
		{"--file", execOptions{Lang: "python", Files: []string{"in/data.txt=" + data}}, "print(open('in/data.txt').read(), end='')", "from the host\n", 0},
		{"timeout", execOptions{Lang: "python", Timeout: time.Second}, "import time; time.sleep(30)", "", 124},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.o
			o.Driver, o.Memory, o.File = "bwrap", "512MiB", "-"
			if o.Timeout == 0 {
				o.Timeout = 10 * time.Second
			}
			var stdout, stderr bytes.Buffer
			err := runExec(context.Background(), o, strings.NewReader(tc.code), &stdout, &stderr)
			code := 0
			var ee *exitError
			if errors.As(err, &ee) {
				code = ee.code
			} else if err != nil {
				t.Fatalf("runExec: %v", err)
			}
			if code != tc.wantExit || stdout.String() != tc.wantStdout {
				t.Errorf("got exit %d stdout %q (stderr %q), want exit %d stdout %q", code, stdout.String(), stderr.String(), tc.wantExit, tc.wantStdout)
			}
			if !strings.Contains(stderr.String(), "· bwrap]") {
				t.Errorf("stderr %q: want a status line naming the driver", stderr.String())
			}
		})
	}
	t.Run("--json", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		o := execOptions{Lang: "python", Driver: "bwrap", Memory: "256MiB", Timeout: 10 * time.Second, File: "-", JSON: true}
		if err := runExec(context.Background(), o, strings.NewReader("print('x')"), &stdout, &stderr); err != nil {
			t.Fatalf("runExec: %v", err)
		}
		var r executors.Result
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil || r.Stdout != "x\n" || r.Driver != "bwrap" || !r.OK() {
			t.Errorf("JSON result: got %+v, %v from %q want stdout x from bwrap", r, err, stdout.String())
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		type badRequest struct {
			execOptions
			want int // exit code; 0 means exitUsage
		}
		for _, o := range []badRequest{
			{execOptions: execOptions{Lang: "cobol"}},
			{execOptions: execOptions{Lang: "python", Files: []string{"no-equals-sign"}}},
			{execOptions: execOptions{Lang: "python", Files: []string{"x=" + filepath.Join(dir, "missing")}}, want: exitBadData}, // a named file that is not there
			{execOptions: execOptions{Lang: "python", Driver: "no-such-driver"}},
			{execOptions: execOptions{Lang: "python", Memory: "lots"}},
		} {
			want := cmp.Or(o.want, exitUsage)
			o := o.execOptions
			if o.Driver == "" {
				o.Driver = "bwrap"
			}
			if o.Memory == "" {
				o.Memory = "512MiB"
			}
			o.File = "-"
			var stdout, stderr bytes.Buffer
			err := runExec(context.Background(), o, strings.NewReader("print(1)"), &stdout, &stderr)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != want || stdout.Len() != 0 {
				t.Errorf("%+v: got error %v stdout %q, want exit code %d and nothing run", o, err, stdout.String(), want)
			}
		}
	})
}
