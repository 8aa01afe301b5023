package hub_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/hub"
	"github.com/codefeedback/codefeedback/internal/hub/hubtest"
)

// TestUploadRoundTrip publishes a card (regular file), a small Parquet file
// (LFS, basic transfer) and a larger one (LFS, multipart) to the fake Hub
// and reads every file back through resolve; a second upload of the same
// content skips the LFS transfer; a wrong token is refused.
func TestUploadRoundTrip(t *testing.T) {
	srv := hubtest.New("hf_test")
	defer srv.Close()
	srv.Chunk = 64 << 10
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := make([]byte, 200<<10)
	rand.Read(big)
	files := []hub.File{
		{PathInRepo: "README.md", LocalPath: write("README.md", []byte("---\nlicense: mit\n---\n# d\n"))},
		{PathInRepo: "data/train-00000-of-00002.parquet", LocalPath: write("a.parquet", []byte("PAR1 small PAR1"))},
		{PathInRepo: "data/train-00001-of-00002.parquet", LocalPath: write("b.parquet", big)},
	}
	ctx := context.Background()
	c := &hub.Client{Endpoint: srv.URL, Token: "hf_test"}
	if err := c.CreateRepo(ctx, "me/ds", true); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateRepo(ctx, "me/ds", true); err != nil {
		t.Fatalf("creating an existing repository: %v", err)
	}
	url, err := c.Upload(ctx, "me/ds", files, "Upload dataset")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(url, "/datasets/me/ds/commit/") {
		t.Errorf("commit URL %q", url)
	}
	repo := srv.Repo("me/ds")
	if repo == nil || !repo.Private || len(repo.Commits) != 1 {
		t.Fatalf("repository %+v, want private with one commit", repo)
	}
	for _, f := range files {
		want, _ := os.ReadFile(f.LocalPath)
		got, err := c.Download(ctx, "me/ds", f.PathInRepo)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: read back %d bytes, want the %d uploaded", f.PathInRepo, len(got), len(want))
		}
	}
	calls := strings.Join(srv.Calls, "\n")
	for _, want := range []string{"POST /api/repos/create", "POST /api/datasets/me/ds/preupload/main", "POST /datasets/me/ds.git/info/lfs/objects/batch", "PUT /lfs-upload/", "PUT /lfs-part/", "POST /lfs-complete/", "POST /lfs-verify/", "POST /api/datasets/me/ds/commit/main"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no %s among the calls:\n%s", want, calls)
		}
	}
	// The same content again: the Hub has the LFS objects, nothing is sent.
	before := len(srv.Calls)
	if _, err := c.Upload(ctx, "me/ds", files, "again"); err != nil {
		t.Fatal(err)
	}
	if again := strings.Join(srv.Calls[before:], "\n"); strings.Contains(again, "/lfs-upload/") || strings.Contains(again, "/lfs-part/") {
		t.Errorf("unchanged LFS files were uploaded again:\n%s", again)
	}
	bad := &hub.Client{Endpoint: srv.URL, Token: "wrong"}
	var he *hub.Error
	if _, err := bad.Upload(ctx, "me/ds", files[:1], "x"); !errors.As(err, &he) || he.Status != http.StatusUnauthorized {
		t.Errorf("wrong token: error %v, want HTTP 401", err)
	}
}
