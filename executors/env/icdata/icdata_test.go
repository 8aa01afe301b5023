package icdata_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env/icdata"
)

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func TestPinned(t *testing.T) {
	m := icdata.Pinned()
	if len(m.Commit) != 40 || len(m.Files) < 300 {
		t.Fatalf("pinned manifest: commit %q, %d files", m.Commit, len(m.Files))
	}
	need := map[string]bool{"data/python/mbpp/ic_mbpp.json": false, "data/sql/spider/ic_spider_dbs.sql": false,
		"docker/bash_scripts/setup_nl2b_fs_1.sh": false, "data/ctf/ic_ctf.json": false,
		"data/results/python/gpt-3.5/ic_python_multiturn_gpt-4_7_turns.json": false}
	for _, f := range m.Files {
		if len(f.SHA256) != 64 || f.Size <= 0 && !strings.HasSuffix(f.Path, "README.md") && !strings.Contains(f.Path, "placeholder") && !strings.Contains(f.Path, ".ignore") {
			t.Errorf("%s: size %d sha %q", f.Path, f.Size, f.SHA256)
		}
		if _, ok := need[f.Path]; ok {
			need[f.Path] = true
		}
	}
	for p, ok := range need {
		if !ok {
			t.Errorf("manifest lacks %s", p)
		}
	}
}

// Fetch over loopback: downloads what is missing, verifies checksums,
// leaves good files alone and refuses paths that leave the directory.
func TestFetch(t *testing.T) {
	files := map[string][]byte{
		"data/nl2bash/nl2bash_fs_1.json":         []byte(`[{"query": "q", "gold": "ls"}]`),
		"docker/bash_scripts/setup_nl2b_fs_1.sh": []byte("mkdir -p /testbed\n"),
		"data/ctf/task_assets/0/a b+c.txt":       []byte("spaces and plus"),
	}
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		p := strings.TrimPrefix(r.URL.Path, "/pin/")
		b, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	defer srv.Close()
	m := icdata.Manifest{Repository: "x/y", Commit: strings.Repeat("a", 40)}
	for p, b := range files {
		m.Files = append(m.Files, icdata.File{Path: p, Size: int64(len(b)), SHA256: sum(b)})
	}
	dir := t.TempDir()
	var log bytes.Buffer
	ctx := context.Background()
	rep, err := icdata.Fetch(ctx, m, icdata.Options{Dir: dir, BaseURL: srv.URL + "/pin", Log: &log})
	if err != nil || rep.Fetched != 3 {
		t.Fatalf("first fetch: %+v, %v", rep, err)
	}
	for p, b := range files {
		got, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: %q, %v", p, got, err)
		}
	}
	// Again: nothing to do. A damaged file is fetched again.
	os.WriteFile(filepath.Join(dir, "data/nl2bash/nl2bash_fs_1.json"), []byte("damaged"), 0o644)
	hits = 0
	rep, err = icdata.Fetch(ctx, m, icdata.Options{Dir: dir, BaseURL: srv.URL + "/pin"})
	if err != nil || rep.Fetched != 1 || rep.Present != 2 || hits != 1 {
		t.Errorf("second fetch: %+v, %v, %d requests; want 1 fetched, 2 present", rep, err, hits)
	}
	// A served file that does not match its checksum is refused.
	bad := m
	bad.Files = []icdata.File{{Path: "data/nl2bash/nl2bash_fs_1.json", Size: 5, SHA256: sum([]byte("other"))}}
	if _, err := icdata.Fetch(ctx, bad, icdata.Options{Dir: t.TempDir(), BaseURL: srv.URL + "/pin"}); !errors.Is(err, icdata.ErrChecksum) {
		t.Errorf("bad checksum: %v, want ErrChecksum", err)
	}
	// Only a prefix.
	rep, err = icdata.Fetch(ctx, m, icdata.Options{Dir: t.TempDir(), BaseURL: srv.URL + "/pin", Only: []string{"docker/"}})
	if err != nil || rep.Fetched != 1 {
		t.Errorf("only docker/: %+v, %v", rep, err)
	}
	// Escaping paths are refused.
	esc := icdata.Manifest{Files: []icdata.File{{Path: "../outside", Size: 1, SHA256: sum([]byte("x"))}}}
	if _, err := icdata.Fetch(ctx, esc, icdata.Options{Dir: t.TempDir(), BaseURL: srv.URL}); err == nil {
		t.Error("path ../outside: no error")
	}
}

// The files may come from a Hub dataset holding the repository's layout:
// hf://datasets/OWNER/NAME as the base URL, resolved (and escaped once) by
// the remote fetcher.
func TestFetchFromHub(t *testing.T) {
	files := map[string][]byte{"data/ctf/task_assets/0/a b+c.txt": []byte("spaces and plus")}
	var got []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		b, ok := files[strings.TrimPrefix(r.URL.Path, "/datasets/me/intercode/resolve/main/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	}))
	defer hub.Close()
	t.Setenv("HF_ENDPOINT", hub.URL)
	m := icdata.Manifest{Repository: "x/y", Commit: strings.Repeat("a", 40)}
	for p, b := range files {
		m.Files = append(m.Files, icdata.File{Path: p, Size: int64(len(b)), SHA256: sum(b)})
	}
	dir := t.TempDir()
	rep, err := icdata.Fetch(context.Background(), m, icdata.Options{Dir: dir, BaseURL: "hf://datasets/me/intercode"})
	if err != nil || rep.Fetched != 1 {
		t.Fatalf("fetch: %+v, %v (requests %q)", rep, err, got)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "data/ctf/task_assets/0/a b+c.txt")); err != nil || string(b) != "spaces and plus" {
		t.Errorf("fetched file: %q, %v", b, err)
	}
}
