package executors_test

import (
	"context"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// countingExecutor answers every run from a function of the request and
// counts the runs that reached it; it tests the cache wrapper's logic only.
type countingExecutor struct {
	info   executors.Info
	answer func(executors.Request) (executors.Result, error)

	mu             sync.Mutex
	runs, sessions int
	closed         bool
}

func (f *countingExecutor) Run(_ context.Context, req executors.Request) (executors.Result, error) {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	return f.answer(req)
}

func (f *countingExecutor) Open(context.Context, executors.Language, executors.SessionOptions) (executors.Session, error) {
	f.mu.Lock()
	f.sessions++
	f.mu.Unlock()
	return nil, nil
}

func (f *countingExecutor) Info() executors.Info { return f.info }

func (f *countingExecutor) Close() error { f.closed = true; return nil }

// mapCache is an in-memory store.Cache.
type mapCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (c *mapCache) Get(_ context.Context, bucket, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[bucket+"/"+key]
	return v, ok, nil
}

func (c *mapCache) Put(_ context.Context, bucket, key string, val []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[bucket+"/"+key] = append([]byte(nil), val...)
	return nil
}

var cacheInfo = executors.Info{Driver: "fake", Image: "img@sha256:aa", Limits: executors.DefaultLimits}

// echo runs "programs" whose result is their code and stdin; code starting
// with a status word gets that status.
func echo(req executors.Request) (executors.Result, error) {
	res := executors.Result{Stdout: req.Code + "|" + req.Stdin, Duration: 3 * time.Millisecond, Driver: "fake", Image: "img@sha256:aa"}
	switch req.Code {
	case "timeout":
		res.TimedOut = true
	case "oom":
		res.OOM = true
	case "killed":
		res.Killed = true
	case "fail":
		res.ExitCode, res.Stderr, res.Exception = 1, "ValueError: x", "ValueError"
	case "sandbox-error":
		return executors.Result{}, errors.New("sandbox broke")
	}
	return res, nil
}

func TestWithCache(t *testing.T) {
	py := func(code string) executors.Request { return executors.Request{Language: executors.Python, Code: code} }
	withStdin := py("print(input())")
	withStdin.Stdin = "2"
	withFile := py("print(open('a').read())")
	withFile.Files = map[string][]byte{"a": []byte("1")}
	withOtherFile := py("print(open('a').read())")
	withOtherFile.Files = map[string][]byte{"a": []byte("2")}
	defaultTimeout := py("x")
	defaultTimeout.Limits.Timeout = executors.DefaultLimits.Timeout
	longer := py("x")
	longer.Limits.Timeout = time.Minute
	bash := py("x")
	bash.Language = executors.Bash

	cases := []struct {
		name     string
		first    executors.Request
		second   executors.Request
		secondEx executors.Info // the second run's executor; zero: the same one
		wantRuns int            // runs that reached an executor, of the two
	}{
		{name: "identical run is served from the cache", first: py("x"), second: py("x"), wantRuns: 1},
		{name: "a failing program is deterministic too", first: py("fail"), second: py("fail"), wantRuns: 1},
		{name: "other code", first: py("x"), second: py("y"), wantRuns: 2},
		{name: "other stdin", first: py("print(input())"), second: withStdin, wantRuns: 2},
		{name: "other file contents", first: withFile, second: withOtherFile, wantRuns: 2},
		{name: "other language", first: py("x"), second: bash, wantRuns: 2},
		{name: "other limits", first: py("x"), second: longer, wantRuns: 2},
		{name: "a limit spelled out as its default is the same run", first: py("x"), second: defaultTimeout, wantRuns: 1},
		{name: "other image digest", first: py("x"), second: py("x"),
			secondEx: executors.Info{Driver: "fake", Image: "img@sha256:bb", Limits: executors.DefaultLimits}, wantRuns: 2},
		{name: "other executor defaults", first: py("x"), second: py("x"),
			secondEx: executors.Info{Driver: "fake", Image: "img@sha256:aa", Limits: executors.Limits{Timeout: time.Second}}, wantRuns: 2},
		{name: "timed-out run is not stored", first: py("timeout"), second: py("timeout"), wantRuns: 2},
		{name: "out-of-memory run is not stored", first: py("oom"), second: py("oom"), wantRuns: 2},
		{name: "killed run is not stored", first: py("killed"), second: py("killed"), wantRuns: 2},
		{name: "sandbox error is not stored", first: py("sandbox-error"), second: py("sandbox-error"), wantRuns: 2},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &mapCache{m: map[string][]byte{}}
			ex1 := &countingExecutor{info: cacheInfo, answer: echo}
			ex2 := ex1
			if tc.secondEx.Driver != "" {
				ex2 = &countingExecutor{info: tc.secondEx, answer: echo}
			}
			r1, err1 := executors.WithCache(ex1, c).Run(ctx, tc.first)
			r2, err2 := executors.WithCache(ex2, c).Run(ctx, tc.second)
			runs := ex1.runs
			if ex2 != ex1 {
				runs += ex2.runs
			}
			if runs != tc.wantRuns {
				t.Errorf("runs = %d, want %d", runs, tc.wantRuns)
			}
			want1, wantErr1 := echo(tc.first)
			want2, wantErr2 := echo(tc.second)
			if !reflect.DeepEqual(r1, want1) || (err1 == nil) != (wantErr1 == nil) {
				t.Errorf("first run = %+v, %v; want %+v, %v", r1, err1, want1, wantErr1)
			}
			if !reflect.DeepEqual(r2, want2) || (err2 == nil) != (wantErr2 == nil) {
				t.Errorf("second run = %+v, %v; want %+v, %v", r2, err2, want2, wantErr2)
			}
		})
	}
}

// Sessions are stateful: every Open reaches the executor. Info and Close
// are the wrapped executor's.
func TestWithCachePassesThrough(t *testing.T) {
	ex := &countingExecutor{info: cacheInfo, answer: echo}
	cex := executors.WithCache(ex, &mapCache{m: map[string][]byte{}})
	for range 2 {
		if _, err := cex.Open(context.Background(), executors.Python, executors.SessionOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if ex.sessions != 2 {
		t.Errorf("sessions opened = %d, want 2", ex.sessions)
	}
	if got := cex.Info(); !reflect.DeepEqual(got, cacheInfo) {
		t.Errorf("Info() = %+v, want %+v", got, cacheInfo)
	}
	if err := cex.Close(); err != nil || !ex.closed {
		t.Errorf("Close() = %v, closed = %v; want nil, true", err, ex.closed)
	}
}
