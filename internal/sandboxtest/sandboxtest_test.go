package sandboxtest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
)

func TestURL(t *testing.T) {
	for _, c := range []struct{ from, query, want string }{
		{"", "", "bwrap://"},
		{"", "pool=2", "bwrap://?pool=2"},
		{"docker://codefeedback-sandbox:bookworm", "", "docker://codefeedback-sandbox:bookworm"},
		{"docker://img?pool=1", "cpus=1", "docker://img?pool=1&cpus=1"},
	} {
		if got := url(c.from, c.query); got != c.want {
			t.Errorf("url(%q, %q) = %q, want %q", c.from, c.query, got, c.want)
		}
	}
}

// Open honours the environment variable, and Shared hands out one
// sandbox that runs code.
func TestOpenAndShared(t *testing.T) {
	t.Setenv("CODEFEEDBACK_SANDBOXTEST_URL", "nosuch://x")
	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }()
		Open(ft, "CODEFEEDBACK_SANDBOXTEST_URL", "")
	}()
	if !strings.Contains(ft.msg, "open sandbox nosuch://x") {
		t.Errorf("Open with an unknown driver in the variable: %q, want it to fail naming the URL", ft.msg)
	}
	ex := Shared(t)
	if Shared(t) != ex {
		t.Error("Shared opened a second sandbox")
	}
	res, err := ex.Run(context.Background(), executors.Request{Language: executors.Python, Code: "print(6*7)"})
	if err != nil || strings.TrimSpace(res.Stdout) != "42" {
		t.Errorf("run in the shared sandbox: %v %+v", err, res)
	}
	// Bwrap opens a sandbox of the test's own.
	own := Bwrap(t, "pool=1")
	if own == ex {
		t.Error("Bwrap returned the shared sandbox")
	}
	res, err = own.Run(context.Background(), executors.Request{Language: executors.Python, Code: "print(6*7)"})
	if err != nil || strings.TrimSpace(res.Stdout) != "42" {
		t.Errorf("run in the test's own sandbox: %v %+v", err, res)
	}
}

// fatalTB records Fatalf and stops the caller as Fatalf does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}
