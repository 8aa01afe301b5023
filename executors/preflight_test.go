package executors

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeRunner answers every run with one result or error.
type fakeRunner struct {
	res Result
	err error
}

func (f fakeRunner) Run(context.Context, Request) (Result, error) { return f.res, f.err }
func (f fakeRunner) Open(context.Context, Language, SessionOptions) (Session, error) {
	return nil, errors.New("no sessions")
}
func (f fakeRunner) Info() Info {
	return Info{Driver: "fake", Limits: Limits{Processes: 1, OpenFiles: 3}.WithDefaults(DefaultLimits)}
}
func (f fakeRunner) Close() error { return nil }

func TestPreflight(t *testing.T) {
	for _, c := range []struct {
		name string
		ex   fakeRunner
		want string // in the error; "" for none
	}{
		{"prints", fakeRunner{res: Result{Stdout: "ok\n"}}, ""},
		{"open files", fakeRunner{res: Result{ExitCode: 127, Stderr: "runner: OSError: [Errno 24] Too many open files: 'x.py'\n"}},
			"exit 127: runner: OSError: [Errno 24] Too many open files: 'x.py'; the open-files limit (nofile=3) is too low"},
		{"processes", fakeRunner{res: Result{ExitCode: 1, ErrorLine: "BlockingIOError: [Errno 11] Resource temporarily unavailable",
			Stderr: "Traceback...\nBlockingIOError: [Errno 11] Resource temporarily unavailable\n"}},
			"exit 1: BlockingIOError: [Errno 11] Resource temporarily unavailable; the process limit (pids=1) is too low"},
		{"timeout", fakeRunner{res: Result{ExitCode: -1, TimedOut: true, Killed: true}}, "timed out; the time limit (timeout=10s)"},
		{"wrong output", fakeRunner{res: Result{Stdout: "\n"}}, "exit 0; check the executor URL's limits"},
		{"sandbox error", fakeRunner{err: errors.New("launching sandbox instance 0: boom")}, "launching sandbox instance 0: boom; check the executor URL's limits"},
		{"set-up error", fakeRunner{err: errors.New("executors: bwrap runner: the sandbox could not start the program: runner: OSError: [Errno 24] Too many open files")},
			"could not start the program: runner: OSError: [Errno 24] Too many open files; the open-files limit (nofile=3) is too low"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := Preflight(context.Background(), c.ex)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
