package llm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"3", 3 * time.Second, true},
		{" 0 ", 0, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"Wed, 01 May 2024 12:00:07 GMT", 7 * time.Second, true},
		{"Wed, 01 May 2024 11:59:00 GMT", 0, true}, // in the past: retry now
		{"-1", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	}
	for _, c := range cases {
		got, ok := parseRetryAfter(c.in, now)
		if got != c.want || ok != c.ok {
			t.Errorf("parseRetryAfter(%q): got %v,%v want %v,%v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestBackoffFullJitter(t *testing.T) {
	base, maxWait := 100*time.Millisecond, time.Second
	for n, ceil := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		ceil *= time.Millisecond
		var hi time.Duration
		for i := 0; i < 2000; i++ {
			d := backoff(n, base, maxWait)
			if d < 0 || d >= ceil {
				t.Fatalf("backoff(%d): got %v, want in [0, %v)", n, d, ceil)
			}
			hi = max(hi, d)
		}
		if hi < ceil*8/10 {
			t.Errorf("backoff(%d): max of 2000 draws %v, want close to %v (full jitter)", n, hi, ceil)
		}
	}
	if d := backoff(200, base, maxWait); d >= maxWait {
		t.Errorf("backoff(200): got %v, want < %v (no overflow)", d, maxWait)
	}
}

func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := newBucket(60) // 1 per second, burst 10
	b.now = func() time.Time { return now }
	b.last = now
	for i := 0; i < 10; i++ {
		if d := b.take(1); d != 0 {
			t.Fatalf("take %d within burst: got wait %v", i, d)
		}
	}
	if d := b.take(1); d != time.Second {
		t.Errorf("take beyond burst: got %v want 1s", d)
	}
	if d := b.take(1); d != 2*time.Second {
		t.Errorf("second take beyond burst: got %v want 2s", d)
	}
	now = now.Add(3 * time.Second)
	if d := b.take(1); d != 0 {
		t.Errorf("after refill: got %v want 0", d)
	}
	// A request larger than the burst is admitted after its share of time.
	if d := b.take(20); d != 20*time.Second {
		t.Errorf("oversized take: got %v want 20s", d)
	}
	b.adjust(20) // refund
	if d := b.take(0); d != 0 {
		t.Errorf("after refund: got %v want 0", d)
	}
	if newBucket(0) != nil {
		t.Error("newBucket(0): want nil (no limit)")
	}
	var nb *bucket
	if err := nb.wait(context.Background(), 1e9); err != nil {
		t.Errorf("nil bucket wait: %v", err)
	}
}

func TestBucketWaitCancelRefunds(t *testing.T) {
	b := newBucket(6) // 0.1/s, burst 1
	if err := b.wait(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := b.wait(ctx, 1); err == nil {
		t.Fatal("got nil, want context error while waiting 10s")
	}
	// The cancelled reservation was refunded: the next wait is ~10 s, not ~20 s.
	if d := b.take(1); d > 11*time.Second {
		t.Errorf("after cancelled wait: got %v, want <= 10s", d)
	}
}

// TestBreakerStates walks the breaker through its states on a clock the
// test moves: the cool-down is an hour, so no check depends on how fast the
// machine runs (a real 30 ms cool-down flaked at load 35).
func TestBreakerStates(t *testing.T) {
	const cool = time.Hour
	b := newBreaker(2, cool)
	clock := time.Unix(0, 0)
	b.now = func() time.Time { return clock } // read under b.mu
	// advance moves the clock and wakes waiters, as the real timer would.
	advance := func(d time.Duration) {
		b.mu.Lock()
		clock = clock.Add(d)
		b.notify()
		b.mu.Unlock()
	}
	// A broken breaker would wait the hour: fail within a minute instead.
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	b.release(false, endpointDown)
	b.release(false, endpointUp) // success resets the count
	b.release(false, endpointDown)
	if b.state != closed {
		t.Fatalf("after non-consecutive failures: got state %v want closed", b.state)
	}
	b.release(false, endpointDown)
	if b.state != open {
		t.Fatalf("after 2 consecutive failures: got state %v want open", b.state)
	}
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if _, err := b.acquire(short); err == nil {
		t.Fatal("acquire while open: got nil, want to wait until ctx ends")
	}
	advance(cool)
	probe, err := b.acquire(ctx)
	if err != nil || !probe {
		t.Fatalf("after cool-down: got probe=%v err=%v, want the probe", probe, err)
	}
	// Others wait while the probe is out; a failed probe reopens, and a
	// waiter becomes the next probe after another cool-down.
	waiting := make(chan bool, 1)
	go func() {
		p, _ := b.acquire(ctx)
		waiting <- p
	}()
	select {
	case <-waiting:
		t.Fatal("a second worker got through while the probe was out")
	case <-time.After(10 * time.Millisecond):
	}
	b.release(true, endpointDown)
	if b.timesOpened() != 2 {
		t.Fatalf("failed probe: opened %d times, want 2", b.timesOpened())
	}
	select {
	case <-waiting:
		t.Fatal("a worker got through the reopened circuit before its cool-down")
	case <-time.After(10 * time.Millisecond):
	}
	advance(cool)
	if p := <-waiting; !p {
		t.Fatal("waiter after the cool-down: want it to be the probe")
	}
	b.release(true, endpointUp)
	if b.state != closed {
		t.Errorf("successful probe: got state %v want closed", b.state)
	}
	// A cancelled probe hands the probe to someone else at once, without
	// the clock moving.
	b.release(false, endpointDown)
	b.release(false, endpointDown)
	advance(cool)
	probe, _ = b.acquire(ctx)
	b.release(probe, unknown)
	if probe2, err := b.acquire(ctx); err != nil || !probe2 {
		t.Errorf("after cancelled probe: got probe=%v err=%v, want a new probe at once", probe2, err)
	}
}

func TestConfigWithEnv(t *testing.T) {
	env := map[string]string{
		"OPENAI_BASE_URL":                 "http://127.0.0.1:1/v1",
		"CODEFEEDBACK_LLM_MODEL":          "generic-model",
		"CODEFEEDBACK_LLM_BASE_URL":       "http://127.0.0.1:2/v1",
		"CODEFEEDBACK_RATE_Q_MODEL":       "rater-model",
		"CODEFEEDBACK_RATE_Q_API_KEY_ENV": "RATER_KEY",
	}
	get := func(k string) string { return env[k] }
	c := Config{Stage: "rate-q", BaseURL: "http://file/v1", Params: Params{Model: "file-model"}, APIKeyEnv: "FILE_KEY"}.WithEnv(get)
	if c.BaseURL != "http://127.0.0.1:2/v1" || c.Model != "rater-model" || c.APIKeyEnv != "RATER_KEY" {
		t.Errorf("stage rate-q: got %q %q %q", c.BaseURL, c.Model, c.APIKeyEnv)
	}
	c = Config{Stage: "writer", Params: Params{Model: "file-model"}, APIKeyEnv: "FILE_KEY"}.WithEnv(get)
	if c.Model != "generic-model" || c.APIKeyEnv != "FILE_KEY" {
		t.Errorf("stage writer: got %q %q", c.Model, c.APIKeyEnv)
	}
	c = Config{Stage: "x", Params: Params{Model: "m"}}.WithEnv(func(string) string { return "" })
	if c.Model != "m" || c.BaseURL != "" {
		t.Errorf("empty env: got %+v", c)
	}
}

// TestDirBatchPartialOutput: an output file read while its runner still
// writes it does not end the batch (CI saw the rest sent live); a .expired
// marker ends it with the lines there are.
func TestDirBatchPartialOutput(t *testing.T) {
	dir := t.TempDir()
	d := &dirBatches{dir: dir}
	in := "{\"custom_id\":\"a\"}\n{\"custom_id\":\"b\"}\n{\"custom_id\":\"c\"}\n"
	id, err := d.upload(context.Background(), "q.jsonl", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "q.output.jsonl")
	lines := []string{`{"custom_id":"a","response":{"status_code":200}}`, `{"custom_id":"b","response":{"status_code":200}}`, `{"custom_id":"c","response":{"status_code":200}}`}
	cases := []struct {
		name, out string
		expired   bool
		done      bool
		state     string
	}{
		{"no output yet", "", false, false, "waiting for q.output.jsonl"},
		{"empty output", "-", false, false, "answers 0 of 3"},
		{"two lines", lines[0] + "\n" + lines[1] + "\n", false, false, "answers 2 of 3"},
		{"last line cut", lines[0] + "\n" + lines[1] + "\n" + lines[2][:20], false, false, "answers 2 of 3"},
		{"last line without newline", lines[0] + "\n" + lines[1] + "\n" + lines[2], false, false, "answers 2 of 3"},
		{"complete", lines[0] + "\n" + lines[1] + "\n" + lines[2] + "\n", false, true, "completed"},
		{"two lines, expired", lines[0] + "\n" + lines[1] + "\n", true, true, "expired"},
	}
	for _, c := range cases {
		os.Remove(out)
		os.Remove(filepath.Join(dir, "q.expired"))
		switch c.out {
		case "":
		case "-":
			os.WriteFile(out, nil, 0o644)
		default:
			os.WriteFile(out, []byte(c.out), 0o644)
		}
		if c.expired {
			os.WriteFile(filepath.Join(dir, "q.expired"), nil, 0o644)
		}
		st, err := d.status(context.Background(), id)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if st.Done != c.done || !strings.Contains(st.State, c.state) {
			t.Errorf("%s: done=%v state=%q, want done=%v state containing %q", c.name, st.Done, st.State, c.done, c.state)
		}
		if c.done && c.out != "" && len(st.Output) != 1 {
			t.Errorf("%s: %d output files, want 1", c.name, len(st.Output))
		}
	}
}
