package benchmarks

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// Verify checks that the file at path holds exactly the published bytes of
// s. The error wraps ErrMissing when there is no file, ErrChecksum when its
// size or SHA-256 differs.
func Verify(path string, s Spec) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("benchmarks: %s: %w at %s (%s, or point --bench-dir or $%s at a directory holding %s)",
			s.Name, ErrMissing, path, FetchHint, EnvDir, s.File)
	}
	if err != nil {
		return fmt.Errorf("benchmarks: %s: %w", s.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return fmt.Errorf("benchmarks: %s: read %s: %w", s.Name, path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 || (s.Size > 0 && n != s.Size) {
		return fmt.Errorf("benchmarks: %s: %s: %w: %d bytes with sha256 %s, want %d bytes with %s (%s to replace it)",
			s.Name, path, ErrChecksum, n, got, s.Size, s.SHA256, FetchHint)
	}
	return nil
}

// Fetcher downloads known benchmarks into a directory. The zero value uses
// http.DefaultClient and the public locations.
type Fetcher struct {
	// Client makes the requests (default http.DefaultClient). Give it a
	// timeout; ctx also bounds every request.
	Client *http.Client
	// Mirror, when set, replaces the public locations: a file is fetched
	// from Mirror + "/" + Spec.File (an organisation's mirror, or a test's
	// loopback server).
	Mirror string
}

// Fetched is the outcome of one Fetch.
type Fetched struct {
	Spec Spec
	Path string
	// URL is where the bytes came from; "" when a verified file was
	// already there and nothing was downloaded.
	URL string
}

// maxSlack bounds how far past the expected size a response is read before
// it is known to be the wrong file.
const maxSlack = 1 << 10

// Fetch makes sure dir holds s's published bytes: a file already there with
// the right checksum is kept; otherwise each location is tried in order and
// the first response whose size and SHA-256 match is moved into place. The
// bytes go to a temporary file in the same directory, are fsynced and
// checked, and only then renamed, so a failed, cut or tampered download
// leaves the previous state (nothing, or the old file) untouched. The error
// names every location tried and why it failed; a wrong file wraps
// ErrChecksum.
func (f *Fetcher) Fetch(ctx context.Context, dir string, s Spec) (Fetched, error) {
	dst := s.Path(dir)
	out := Fetched{Spec: s, Path: dst}
	if Verify(dst, s) == nil {
		return out, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return out, fmt.Errorf("benchmarks: fetch %s: %w", s.Name, err)
	}
	urls := s.URLs
	if f.Mirror != "" {
		urls = []string{strings.TrimRight(f.Mirror, "/") + "/" + s.File}
	}
	var errs []error
	for _, u := range urls {
		err := f.fetchOne(ctx, u, dst, s)
		if err == nil {
			out.URL = u
			return out, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return out, fmt.Errorf("benchmarks: fetch %s: %w", s.Name, errors.Join(errs...))
}

func (f *Fetcher) fetchOne(ctx context.Context, url, dst string, s Spec) error {
	c := f.Client
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".part-*")
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, s.Size+maxSlack))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 || n != s.Size {
		return fmt.Errorf("%s: %w: got %d bytes with sha256 %s, want %d bytes with %s", url, ErrChecksum, n, got, s.Size, s.SHA256)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("%s: %w", url, err)
	}
	return syncDir(filepath.Dir(dst))
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
