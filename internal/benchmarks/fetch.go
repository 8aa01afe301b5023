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
	"strings"

	"github.com/codefeedback/codefeedback/internal/remote"
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

// Fetcher downloads known benchmarks into a directory through the one
// fetcher of remote inputs (internal/remote: SHA-256 and size checked before
// a file takes its name, interrupted downloads resumed, progress lines).
// The zero value uses a default client and the public locations.
type Fetcher struct {
	// Client makes the requests (default: a 10-minute timeout per file);
	// ctx also bounds every request.
	Client *http.Client
	// Mirror, when set, replaces the public locations: a file is fetched
	// from Mirror + "/" + Spec.File (an organisation's mirror, or a test's
	// loopback server).
	Mirror string
	// Progress, when set, gets a line per download started and finished.
	Progress io.Writer
}

// Fetched is the outcome of one Fetch.
type Fetched struct {
	Spec Spec
	Path string
	// URL is where the bytes came from; "" when a verified file was
	// already there and nothing was downloaded.
	URL string
}

// Fetch makes sure dir holds s's published bytes: a file already there with
// the right checksum is kept; otherwise each location is tried in order
// until one serves the right size and SHA-256. A failed, cut or tampered
// download leaves the previous state (nothing, or the old file) untouched;
// a cut one is resumed by the next Fetch. The error names every location
// tried and why it failed; a wrong file wraps ErrChecksum.
func (f *Fetcher) Fetch(ctx context.Context, dir string, s Spec) (Fetched, error) {
	dst := s.Path(dir)
	out := Fetched{Spec: s, Path: dst}
	if Verify(dst, s) == nil {
		return out, nil
	}
	urls := s.URLs
	if f.Mirror != "" {
		urls = []string{strings.TrimRight(f.Mirror, "/") + "/" + s.File}
	}
	var errs []error
	for _, u := range urls {
		_, err := remote.Fetch(ctx, u, remote.Options{Dest: dst, SHA256: s.SHA256, Size: s.Size, Client: f.Client, Progress: f.Progress})
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
