package bashenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// md5File reads only regular files: a symlink or FIFO put where the walk
// saw a file is refused at once.
func TestMD5FileRefusesSwaps(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "host-secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // "" = an error
	}{
		{file, "b1946ac92492d2347c6235b4d2611184"},
		{link, ""},
		{fifo, ""},
		{dir, ""},
	} {
		got, err := md5File(tc.path)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s: hashed %s, want a refusal", filepath.Base(tc.path), got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", filepath.Base(tc.path), got, err, tc.want)
		}
	}
}
