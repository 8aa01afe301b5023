package drivertest

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
)

// host is the state the attacks must not reach or change.
type host struct {
	secret     string // OPENAI_API_KEY value in the test's environment
	dir        string // host directory holding a secret file
	secretFile string
	fileToken  string
	repo       string // the test's working directory
	tcpPort    int
	udpPort    int
	tcpHits    atomic.Int64
	udpHits    atomic.Int64
}

func token(t *testing.T) string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func newHost(t *testing.T) *host {
	h := &host{secret: "sk-test-secret-" + token(t), fileToken: "host-file-" + token(t)}
	t.Setenv("OPENAI_API_KEY", h.secret)
	h.dir = t.TempDir()
	h.secretFile = filepath.Join(h.dir, "secret.txt")
	if err := os.WriteFile(h.secretFile, []byte(h.fileToken), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(h.dir, 0o755)
	var err error
	if h.repo, err = os.Getwd(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	h.tcpPort = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.tcpHits.Add(1)
			c.Close()
		}
	}()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	h.udpPort = pc.LocalAddr().(*net.UDPAddr).Port
	go func() {
		buf := make([]byte, 2048)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
			h.udpHits.Add(1)
		}
	}()
	return h
}

// checkUntouched fails t if an attack reached the host.
func (h *host) checkUntouched(t *testing.T, marker string) {
	t.Helper()
	if n := h.tcpHits.Load(); n != 0 {
		t.Errorf("host TCP listener on 127.0.0.1:%d got %d connections, want 0", h.tcpPort, n)
	}
	if n := h.udpHits.Load(); n != 0 {
		t.Errorf("host UDP listener on 127.0.0.1:%d got %d datagrams, want 0", h.udpPort, n)
	}
	if b, err := os.ReadFile(h.secretFile); err != nil || string(b) != h.fileToken {
		t.Errorf("host secret file changed: %q, %v", b, err)
	}
	entries, _ := os.ReadDir(h.dir)
	if len(entries) != 1 {
		t.Errorf("host dir %s has %d entries, want only secret.txt", h.dir, len(entries))
	}
	for _, p := range []string{filepath.Join(h.repo, "pwned.txt"), "/tmp/pwned.txt", "/home/pwned.txt", "/etc/pwned.txt", "/usr/pwned.txt", "/root/pwned.txt"} {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("attack created %s on the host", p)
		}
	}
	if marker != "" {
		// The wait ends as soon as they are gone; the minute is a hang
		// guard for a loaded machine's slow teardown.
		if pids := hostProcesses(marker, time.Minute); len(pids) > 0 {
			t.Errorf("host processes still running with marker %q: %v", marker, pids)
		}
	}
}

// checkOutput fails t if an attack's output says it got what it wanted
// (LEAK) or shows a host secret.
func (h *host) checkOutput(t *testing.T, r executors.Result) {
	t.Helper()
	for _, s := range []string{r.Stdout, r.Stderr} {
		if i := strings.Index(s, "LEAK"); i >= 0 {
			t.Errorf("attack succeeded: %q", clip(s[i:]))
		}
		if strings.Contains(s, h.secret) || strings.Contains(s, h.fileToken) {
			t.Errorf("a host secret appeared in the output")
		}
	}
}

// checkNextRun fails t unless a plain run after an attack works.
func checkNextRun(t *testing.T, ex executors.Executor) {
	t.Helper()
	if r := run(t, ex, py("print(6 * 7)")); r.Stdout != "42\n" || r.ExitCode != 0 {
		t.Errorf("the next run after the attack: got %q exit %d stderr %q, want 42", r.Stdout, r.ExitCode, clip(r.Stderr))
	}
}

// hostProcesses lists host pids whose command line contains marker, waiting
// up to wait for them to go away.
func hostProcesses(marker string, wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		var pids []string
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			if d.Name()[0] < '0' || d.Name()[0] > '9' {
				continue
			}
			b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
			if err != nil {
				continue
			}
			if strings.Contains(string(b), marker) {
				pids = append(pids, d.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sqliteDB builds a small SQLite database with the host's python3.
func sqliteDB(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	script := `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
c.executescript("CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES ('ann'), ('al'), ('bob');")
c.commit()`
	if out, err := exec.Command("python3", "-c", script, path).CombinedOutput(); err != nil {
		t.Skipf("building a test SQLite database needs python3 on the host: %v %s", err, out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
