package serve

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/internal/sandboxtest"
)

// sfRequest is a client's request written from SandboxFusion's documented
// RunCodeRequest, independent of this package's types.
type sfRequest struct {
	Code           string            `json:"code"`
	Language       string            `json:"language"`
	CompileTimeout float64           `json:"compile_timeout"`
	RunTimeout     float64           `json:"run_timeout"`
	MemoryLimitMB  int               `json:"memory_limit_MB"`
	Stdin          string            `json:"stdin"`
	Files          map[string]string `json:"files"`
	FetchFiles     []string          `json:"fetch_files"`
}

// sfResponse is SandboxFusion's documented RunCodeResponse.
type sfResponse struct {
	Status        string            `json:"status"`
	Message       string            `json:"message"`
	CompileResult *sfStep           `json:"compile_result"`
	RunResult     *sfStep           `json:"run_result"`
	Files         map[string]string `json:"files"`
	Notes         []string          `json:"notes"`
}

type sfStep struct {
	Status        string   `json:"status"`
	ExecutionTime *float64 `json:"execution_time"`
	ReturnCode    *int     `json:"return_code"`
	Stdout        string   `json:"stdout"`
	Stderr        string   `json:"stderr"`
}

func start(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	if cfg.Exec == nil {
		cfg.Exec = sandboxtest.Shared(t)
	}
	s := New(cfg)
	hs := httptest.NewServer(s.Handler()) // 127.0.0.1: loopback only
	t.Cleanup(hs.Close)
	return s, hs
}

func post(t *testing.T, ctx context.Context, url, key string, body any) (int, []byte) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

func runCode(t *testing.T, url string, req sfRequest) sfResponse {
	t.Helper()
	code, body := post(t, context.Background(), url+"/run_code", "", req)
	if code != http.StatusOK {
		t.Fatalf("run_code: HTTP %d: %s", code, body)
	}
	var r sfResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("run_code answer %s: %v", body, err)
	}
	return r
}

// programs print "ok" and exit 3 in every language the runner knows
// (SQL prints its row and exits 0). Names are SandboxFusion's where it
// has the language (nodejs, cpp), the sandbox's otherwise.
var programs = map[executors.Language]struct{ name, code string }{
	executors.Python:     {"python", "import sys\nprint('ok')\nsys.exit(3)\n"},
	executors.Bash:       {"bash", "echo ok\nexit 3\n"},
	executors.SQL:        {"sql", "SELECT 'ok' AS v;\n"},
	executors.JavaScript: {"nodejs", "console.log('ok');\nprocess.exit(3);\n"},
	executors.TypeScript: {"typescript", "const s: string = 'ok';\nconsole.log(s);\nprocess.exit(3);\n"},
	executors.C:          {"c", "#include <stdio.h>\nint main(void) { puts(\"ok\"); return 3; }\n"},
	executors.CPP:        {"cpp", "#include <cstdio>\nint main() { std::puts(\"ok\"); return 3; }\n"},
	executors.Go:         {"go", "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(\"ok\")\n\tos.Exit(3)\n}\n"},
	executors.Java:       {"java", "public class Main {\n  public static void main(String[] a) {\n    System.out.println(\"ok\");\n    System.exit(3);\n  }\n}\n"},
	executors.Rust:       {"rust", "fn main() {\n    println!(\"ok\");\n    std::process::exit(3);\n}\n"},
	executors.Ruby:       {"ruby", "puts 'ok'\nexit 3\n"},
	executors.PHP:        {"php", "<?php\necho \"ok\\n\";\nexit(3);\n"},
	executors.Lua:        {"lua", "print('ok')\nos.exit(3)\n"},
}

// TestRunCodeMatchesExec: a client written to SandboxFusion's documented
// request and response gets, for every language this sandbox runs, what
// the executor itself answers (exec's result): stdout, return code, step
// statuses, and a compile_result exactly for compiled languages.
func TestRunCodeMatchesExec(t *testing.T) {
	ex := sandboxtest.Shared(t)
	_, hs := start(t, Config{Exec: ex, Concurrency: 2})
	ctx := context.Background()
	langs, err := executors.Languages(ctx, ex)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, ls := range langs {
		p, ok := programs[ls.Language]
		if !ok {
			t.Errorf("no test program for %s: add one", ls.Language)
			continue
		}
		if !ls.Available {
			t.Logf("%s: not in this sandbox (%s missing)", ls.Language, ls.Missing)
			continue
		}
		t.Run(string(ls.Language), func(t *testing.T) {
			direct, err := ex.Run(ctx, executors.Request{Language: ls.Language, Code: p.code})
			if err != nil {
				t.Fatal(err)
			}
			got := runCode(t, hs.URL, sfRequest{Code: p.code, Language: p.name, CompileTimeout: 60, RunTimeout: 10, MemoryLimitMB: -1})
			if got.RunResult == nil {
				t.Fatalf("no run_result: %+v", got)
			}
			if got.RunResult.Stdout != direct.Stdout {
				t.Errorf("stdout: got %q want %q (exec)", got.RunResult.Stdout, direct.Stdout)
			}
			if got.RunResult.ReturnCode == nil || *got.RunResult.ReturnCode != direct.ExitCode {
				t.Errorf("return_code: got %v want %d (exec)", got.RunResult.ReturnCode, direct.ExitCode)
			}
			if got.RunResult.Status != StepFinished || got.RunResult.ExecutionTime == nil {
				t.Errorf("run_result: got status %q, execution_time %v; want Finished and a time", got.RunResult.Status, got.RunResult.ExecutionTime)
			}
			wantStatus := StatusSuccess
			if !direct.OK() {
				wantStatus = StatusFailed
			}
			if got.Status != wantStatus {
				t.Errorf("status: got %q want %q (exec exit %d)", got.Status, wantStatus, direct.ExitCode)
			}
			if (got.CompileResult != nil) != ls.Language.Compiled() {
				t.Errorf("compile_result: got %+v, want one exactly for compiled languages", got.CompileResult)
			}
			if ls.Language != executors.SQL && !strings.Contains(got.RunResult.Stdout, "ok") {
				t.Errorf("stdout %q: want ok", got.RunResult.Stdout)
			}
		})
		ran++
	}
	if ran == 0 {
		t.Fatal("no language ran")
	}
}

// TestRunCodeStatuses: a timeout is TimeLimitExceeded with no return
// code (Failed); a compile error is a compile_result with the compiler's
// return code and no run_result; stdin and files (base64) reach the run.
func TestRunCodeStatuses(t *testing.T) {
	_, hs := start(t, Config{Concurrency: 2, MaxRunTimeout: 2 * time.Second})
	tle := runCode(t, hs.URL, sfRequest{Code: "while True: pass\n", Language: "python", RunTimeout: 1})
	if tle.Status != StatusFailed || tle.RunResult == nil || tle.RunResult.Status != StepTimeout || tle.RunResult.ReturnCode != nil {
		t.Errorf("endless loop: got %+v / %+v, want Failed, TimeLimitExceeded, no return code", tle, tle.RunResult)
	}
	io := runCode(t, hs.URL, sfRequest{Code: "print(input().upper(), open('data/in.txt').read())\n", Language: "python",
		Stdin: "hello\n", Files: map[string]string{"data/in.txt": base64.StdEncoding.EncodeToString([]byte("from a file"))}})
	if io.RunResult == nil || io.RunResult.Stdout != "HELLO from a file\n" {
		t.Errorf("stdin and files: got %+v, want HELLO from a file", io.RunResult)
	}
	if ls, _ := executors.Languages(context.Background(), sandboxtest.Shared(t)); available(ls, executors.C) {
		ce := runCode(t, hs.URL, sfRequest{Code: "int main(void) { return x; }\n", Language: "c"})
		if ce.Status != StatusFailed || ce.CompileResult == nil || ce.RunResult != nil ||
			ce.CompileResult.ReturnCode == nil || *ce.CompileResult.ReturnCode == 0 || !strings.Contains(ce.CompileResult.Stderr, "x") {
			t.Errorf("compile error: got %+v (compile %+v), want Failed, a failed compile_result, no run_result", ce, ce.CompileResult)
		}
	}
}

func available(ls []executors.LanguageStatus, l executors.Language) bool {
	for _, s := range ls {
		if s.Language == l {
			return s.Available
		}
	}
	return false
}

// TestLimitsAndRefusals: limits above the maxima are clamped and the
// answer says so (and the clamped limit holds: a loop spinning past a 1 s
// maximum times out; limits count CPU time, as every sandbox run's do); oversized bodies get 413, bad requests 400, a
// missing API key 401; fetch_files is refused, not ignored.
func TestLimitsAndRefusals(t *testing.T) {
	s, hs := start(t, Config{Concurrency: 1, MaxBody: 4 << 10, MaxRunTimeout: time.Second, MaxMemoryMB: 256})
	r := runCode(t, hs.URL, sfRequest{Code: "while True:\n    pass\nprint('woke')\n", Language: "python", RunTimeout: 100, MemoryLimitMB: 100000})
	notes := strings.Join(r.Notes, "; ")
	for _, want := range []string{"run_timeout 100s clamped to the server's maximum 1s", "memory_limit_MB 100000 clamped to the server's maximum 256"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q: want %q", notes, want)
		}
	}
	if r.RunResult == nil || r.RunResult.Status != StepTimeout {
		t.Errorf("an endless loop under a 1 s maximum: got %+v, want TimeLimitExceeded", r.RunResult)
	}
	cases := []struct {
		name string
		body any
		want int
	}{
		{"oversized", sfRequest{Code: "print(1)\n#" + strings.Repeat("x", 8<<10), Language: "python"}, http.StatusRequestEntityTooLarge},
		{"unknown language", sfRequest{Code: "x", Language: "cobol"}, http.StatusBadRequest},
		{"empty code", sfRequest{Code: " ", Language: "python"}, http.StatusBadRequest},
		{"bad base64", sfRequest{Code: "print(1)", Language: "python", Files: map[string]string{"a": "!!"}}, http.StatusBadRequest},
		{"file outside scratch", sfRequest{Code: "print(1)", Language: "python", Files: map[string]string{"../x": "eA=="}}, http.StatusBadRequest},
		{"fetch_files", sfRequest{Code: "print(1)", Language: "python", FetchFiles: []string{"out.txt"}}, http.StatusBadRequest},
	}
	for _, c := range cases {
		if code, body := post(t, context.Background(), hs.URL+"/run_code", "", c.body); code != c.want {
			t.Errorf("%s: got HTTP %d (%s), want %d", c.name, code, body, c.want)
		}
	}
	if got := s.m.tooLarge.Load(); got != 1 {
		t.Errorf("too_large counter: got %d want 1", got)
	}
	_, keyed := start(t, Config{Concurrency: 1, APIKey: "k3y"})
	if code, _ := post(t, context.Background(), keyed.URL+"/run_code", "", sfRequest{Code: "print(1)", Language: "python"}); code != http.StatusUnauthorized {
		t.Errorf("no key: got HTTP %d want 401", code)
	}
	if code, body := post(t, context.Background(), keyed.URL+"/run_code", "k3y", sfRequest{Code: "print(1)", Language: "python"}); code != http.StatusOK {
		t.Errorf("with key: got HTTP %d (%s) want 200", code, body)
	}
	resp, err := http.Get(keyed.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/health without key: got HTTP %d want 200", resp.StatusCode)
	}
}

// TestHostileCodeContained: programs sent through the API cannot reach
// the network (not even this server on loopback), read a host file, see
// the server's API key in their environment, or take the server down
// with a fork bomb: after each, the server still answers runs.
func TestHostileCodeContained(t *testing.T) {
	const key = "sk-serve-secret-5d1e"
	t.Setenv("CODEFEEDBACK_SERVE_API_KEY", key)
	secretDir := t.TempDir()
	secretFile := filepath.Join(secretDir, "secret.txt")
	if err := os.WriteFile(secretFile, []byte("host-secret-7f3a"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, hs := start(t, Config{Concurrency: 2, APIKey: key, MaxRunTimeout: 5 * time.Second})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(hs.URL, "http://"))
	run := func(lang, code string) sfResponse {
		t.Helper()
		status, body := post(t, context.Background(), hs.URL+"/run_code", key, sfRequest{Code: code, Language: lang, RunTimeout: 5})
		if status != http.StatusOK {
			t.Fatalf("HTTP %d: %s", status, body)
		}
		var r sfResponse
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	out := func(r sfResponse) string {
		if r.RunResult == nil {
			return r.Message
		}
		return r.RunResult.Stdout + r.RunResult.Stderr
	}
	attacks := []struct {
		name, lang, code, leak string
	}{
		{"network to this server", "python", fmt.Sprintf("import socket\ntry:\n    socket.create_connection(('127.0.0.1', %s), timeout=3)\n    print('CONNECTED')\nexcept OSError as e:\n    print('blocked', e)\n", port), "CONNECTED"},
		{"network outside", "bash", "(exec 3<>/dev/tcp/1.1.1.1/80 && echo CONNECTED) 2>&1 || echo blocked\n", "CONNECTED"},
		{"host file", "python", fmt.Sprintf("try:\n    print(open(%q).read())\nexcept OSError as e:\n    print('blocked', e)\n", secretFile), "host-secret-7f3a"},
		{"environment", "python", "import os\nprint(dict(os.environ))\nprint(open('/proc/1/environ','rb').read() if os.path.exists('/proc/1/environ') else '')\n", key},
		{"parent environment", "bash", "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; env\n", key},
		{"fork bomb", "bash", ":(){ :|:& };:\n", ""},
	}
	for _, a := range attacks {
		r := run(a.lang, a.code)
		if a.leak != "" && strings.Contains(out(r), a.leak) {
			t.Errorf("%s escaped: %s", a.name, out(r))
		}
		after := run("python", "print('still here')\n")
		if after.RunResult == nil || after.RunResult.Stdout != "still here\n" {
			t.Fatalf("after %s the server does not run code: %+v", a.name, after)
		}
	}
	if got := s.m.sandboxError.Load(); got != 0 {
		t.Errorf("sandbox errors: got %d want 0", got)
	}
}

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if dl, ok := t.Deadline(); ok && time.Until(dl) < 5*time.Second {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClientDisconnectCancels: a client that goes away cancels its run
// (the executor returns the cancellation rather than the run ending on
// its own 30 s clock), and its slot serves the next request.
func TestClientDisconnectCancels(t *testing.T) {
	s, hs := start(t, Config{Concurrency: 1, MaxRunTimeout: 30 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(sfRequest{Code: "import time\ntime.sleep(600)\n", Language: "python", RunTimeout: 30})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/run_code", bytes.NewReader(b))
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	waitFor(t, "the run to start", func() bool { return s.m.inFlight.Load() == 1 })
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the cancelled client got an answer")
	}
	waitFor(t, "the run to be cancelled", func() bool { return s.m.cancelled.Load()+s.m.abandoned.Load() == 1 })
	if got := s.m.cancelled.Load(); got != 1 {
		t.Errorf("cancelled runs: got %d want 1 (abandoned %d: the run ended on its own)", got, s.m.abandoned.Load())
	}
	r := runCode(t, hs.URL, sfRequest{Code: "print('next')\n", Language: "python"})
	if r.RunResult == nil || r.RunResult.Stdout != "next\n" {
		t.Errorf("next request: got %+v", r)
	}
}

// TestLoadNoLostOrMixedResponses: 64 concurrent clients, each sending
// runs that print their own token; every response arrives and carries its
// own request's token. Throughput is logged, not asserted (the machine's
// load decides it); see docs/serve.md for measured figures.
func TestLoadNoLostOrMixedResponses(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the load test in -short mode")
	}
	s, hs := start(t, Config{Concurrency: 2})
	const clients, each = 64, 2
	var wg sync.WaitGroup
	errs := make(chan string, clients*each)
	begin := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				token := fmt.Sprintf("tok-%d-%d", c, i)
				b, _ := json.Marshal(sfRequest{Code: fmt.Sprintf("print(%q)\n", token), Language: "python"})
				resp, err := http.Post(hs.URL+"/run_code", "application/json", bytes.NewReader(b))
				if err != nil {
					errs <- fmt.Sprintf("%s: %v", token, err)
					continue
				}
				var r sfResponse
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				switch {
				case err != nil:
					errs <- fmt.Sprintf("%s: %v", token, err)
				case r.RunResult == nil || r.RunResult.Stdout != token+"\n":
					errs <- fmt.Sprintf("%s: got %+v", token, r.RunResult)
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		n++
		if n <= 5 {
			t.Errorf("lost or mixed: %s", e)
		}
	}
	if n > 0 {
		t.Fatalf("%d of %d responses lost or mixed up", n, clients*each)
	}
	if got := s.m.runs.Load(); got != clients*each {
		t.Errorf("runs: got %d want %d", got, clients*each)
	}
	t.Logf("%d runs from %d clients in %v (%.1f runs/s)", clients*each, clients, time.Since(begin), float64(clients*each)/time.Since(begin).Seconds())
}

// TestSubmit: the tests-based endpoint judges code or a completion's code
// block against the tests of a ground truth, says which failed, and
// returns the execution record.
func TestSubmit(t *testing.T) {
	_, hs := start(t, Config{Concurrency: 2})
	gt := map[string]any{"language": "python", "tests": []string{"assert sq(2) == 4", "assert sq(3) == 9"}, "timeout_s": 10}
	cases := []struct {
		name        string
		extra       map[string]any
		passed      bool
		passedCount int
		outcome     string
	}{
		{"right code", map[string]any{"code": "def sq(x):\n    return x * x\n"}, true, 2, "pass"},
		{"wrong completion", map[string]any{"completion": "Sure:\n```python\ndef sq(x):\n    return x * 2\n```\nDone."}, false, 1, "wrong_answer"},
		{"crash", map[string]any{"code": "def sq(x):\n    return x / 0\n"}, false, 0, "ZeroDivisionError"},
		{"no code", map[string]any{"completion": ""}, false, 0, "error"},
	}
	for _, c := range cases {
		body := map[string]any{}
		for k, v := range gt {
			body[k] = v
		}
		for k, v := range c.extra {
			body[k] = v
		}
		code, out := post(t, context.Background(), hs.URL+"/submit", "", body)
		if code != http.StatusOK {
			t.Fatalf("%s: HTTP %d: %s", c.name, code, out)
		}
		var r SubmitResponse
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		if r.Passed != c.passed || r.PassedCount != c.passedCount || r.Outcome != c.outcome || r.Total != 2 {
			t.Errorf("%s: got passed=%v %d/%d outcome %q, want passed=%v %d/2 %q", c.name, r.Passed, r.PassedCount, r.Total, r.Outcome, c.passed, c.passedCount, c.outcome)
		}
		if c.outcome != "error" && (r.Execution.Judge == nil || r.Execution.Passed == nil || *r.Execution.Passed != c.passed) {
			t.Errorf("%s: execution record %+v does not hold the verdict", c.name, r.Execution)
		}
	}
	if code, _ := post(t, context.Background(), hs.URL+"/submit", "", map[string]any{"code": "x = 1"}); code != http.StatusBadRequest {
		t.Errorf("no tests: got HTTP %d want 400", code)
	}
}

// TestMeasureThroughput (CODEFEEDBACK_SERVE_MEASURE=1 only) compares the
// pool's direct throughput with the server's at 64 concurrent clients, for
// docs/serve.md. It logs; it asserts nothing about time.
func TestMeasureThroughput(t *testing.T) {
	if os.Getenv("CODEFEEDBACK_SERVE_MEASURE") == "" {
		t.Skip("skipping: set CODEFEEDBACK_SERVE_MEASURE=1 to measure")
	}
	ex := sandboxtest.Shared(t)
	_, hs := start(t, Config{Exec: ex, Concurrency: 2})
	const n, clients = 256, 64
	ctx := context.Background()
	measure := func(one func(i int) error) time.Duration {
		begin := time.Now()
		var wg sync.WaitGroup
		next := make(chan int, n)
		for i := 0; i < n; i++ {
			next <- i
		}
		close(next)
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					if err := one(i); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(begin)
	}
	code := func(i int) string { return fmt.Sprintf("print(%d)\n", i) }
	direct := measure(func(i int) error {
		res, err := ex.Run(ctx, executors.Request{Language: executors.Python, Code: code(i)})
		if err == nil && res.Stdout != fmt.Sprintf("%d\n", i) {
			err = fmt.Errorf("direct %d: got %q", i, res.Stdout)
		}
		return err
	})
	served := measure(func(i int) error {
		b, _ := json.Marshal(sfRequest{Code: code(i), Language: "python"})
		resp, err := http.Post(hs.URL+"/run_code", "application/json", bytes.NewReader(b))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var r sfResponse
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return err
		}
		if r.RunResult == nil || r.RunResult.Stdout != fmt.Sprintf("%d\n", i) {
			return fmt.Errorf("served %d: got %+v", i, r.RunResult)
		}
		return nil
	})
	t.Logf("%d python runs, %d clients: direct %v (%.1f/s), served %v (%.1f/s): %.0f%% of direct",
		n, clients, direct, n/direct.Seconds(), served, n/served.Seconds(), 100*direct.Seconds()/served.Seconds())
}
