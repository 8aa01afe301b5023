// Package remote brings input files from where datasets live to a local
// cache: hf://datasets/OWNER/NAME[@REV]/PATH through the Hugging Face Hub's
// resolve endpoint (HF_TOKEN when set, HF_ENDPOINT for a mirror), and plain
// http(s) URLs. A cached copy is revalidated with its ETag, so a re-run
// downloads nothing when the file did not change; every file's SHA-256 is
// computed while it downloads and recorded beside it.
package remote

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// IsURL reports whether s names a remote file rather than a local path.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "hf://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// Options configure Fetch. Zero values take the defaults documented per field.
type Options struct {
	// CacheDir holds downloads (default os.UserCacheDir()/codefeedback/remote).
	CacheDir string
	// Client does the HTTP requests (default: a client with a 10-minute
	// timeout per file).
	Client *http.Client
	// HubEndpoint is the Hub's base URL (default $HF_ENDPOINT, else
	// https://huggingface.co).
	HubEndpoint string
	// Token authorises Hub requests (default $HF_TOKEN). It is sent to the
	// Hub's host only: Go's client drops it on a redirect to another host
	// (the Hub redirects large files to its CDN).
	Token string
	// SHA256, when set, must match the file.
	SHA256 string
}

// File is a fetched file.
type File struct {
	URI    string `json:"uri"`  // as given
	URL    string `json:"url"`  // the http(s) URL it resolved to
	Path   string `json:"path"` // the local copy
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	ETag   string `json:"etag,omitempty"`
	// Downloaded is false when the cached copy was still current.
	Downloaded bool `json:"-"`
}

// Resolve turns uri into the http(s) URL to download.
func Resolve(uri string, o Options) (string, error) {
	if !strings.HasPrefix(uri, "hf://") {
		u, err := url.Parse(uri)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("remote: %q is not an http(s) or hf:// URL", uri)
		}
		return uri, nil
	}
	// hf://datasets/OWNER/NAME[@REV]/PATH (also models/ and spaces/).
	rest := strings.TrimPrefix(uri, "hf://")
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 4 || parts[1] == "" || parts[2] == "" || parts[3] == "" {
		return "", fmt.Errorf("remote: %q: want hf://datasets/OWNER/NAME[@REVISION]/PATH", uri)
	}
	kind, owner, name, file := parts[0], parts[1], parts[2], parts[3]
	prefix := ""
	switch kind {
	case "datasets":
		prefix = "datasets/"
	case "spaces":
		prefix = "spaces/"
	case "models":
	default:
		return "", fmt.Errorf("remote: %q: repository type %q (want datasets, models or spaces)", uri, kind)
	}
	rev := "main"
	if n, r, ok := strings.Cut(name, "@"); ok {
		if r == "" {
			return "", fmt.Errorf("remote: %q: empty revision after @", uri)
		}
		name, rev = n, r
	}
	base := strings.TrimRight(cmp.Or(o.HubEndpoint, os.Getenv("HF_ENDPOINT"), "https://huggingface.co"), "/")
	return fmt.Sprintf("%s/%s%s/%s/resolve/%s/%s", base, prefix, url.PathEscape(owner), url.PathEscape(name),
		url.PathEscape(rev), escapePath(file)), nil
}

func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

// Fetch returns a local copy of uri, downloading it unless the cached copy
// is current (same ETag). A download is written to a temporary name and
// renamed, so an interrupted one never looks complete.
func Fetch(ctx context.Context, uri string, o Options) (File, error) {
	u, err := Resolve(uri, o)
	if err != nil {
		return File{}, err
	}
	dir := o.CacheDir
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return File{}, fmt.Errorf("remote: no user cache directory: %w", err)
		}
		dir = filepath.Join(base, "codefeedback", "remote")
	}
	sum := sha256.Sum256([]byte(u))
	slot := filepath.Join(dir, hex.EncodeToString(sum[:8]))
	name := path.Base(strings.SplitN(u, "?", 2)[0])
	if name == "" || name == "." || name == "/" {
		name = "file"
	}
	f := File{URI: uri, URL: u, Path: filepath.Join(slot, name)}
	meta := filepath.Join(slot, "meta.json")
	var cached File
	if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, &cached) == nil && cached.URL == u {
		if _, err := os.Stat(f.Path); err != nil {
			cached = File{}
		}
	} else {
		cached = File{}
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return File{}, fmt.Errorf("remote: %s: %w", uri, err)
	}
	token := o.Token
	if token == "" && strings.HasPrefix(uri, "hf://") {
		token = os.Getenv("HF_TOKEN")
	}
	if token != "" && strings.HasPrefix(uri, "hf://") {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if cached.ETag != "" {
		req.Header.Set("If-None-Match", cached.ETag)
	}
	base := o.Client
	if base == nil {
		base = &http.Client{Timeout: 10 * time.Minute}
	}
	// The Hub's resolve answer is a redirect to its CDN that carries the
	// file's ETag; keep it before the redirect is followed.
	var linked string
	hc := *base
	hc.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if r.Response != nil && linked == "" {
			linked = cmp.Or(r.Response.Header.Get("X-Linked-Etag"), r.Response.Header.Get("ETag"))
		}
		if base.CheckRedirect != nil {
			return base.CheckRedirect(r, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	resp, err := hc.Do(req)
	if err != nil {
		return File{}, fmt.Errorf("remote: get %s: %w", uri, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && cached.SHA256 != "":
		cached.URI = uri
		return cached, checkSum(cached, o.SHA256)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return File{}, fmt.Errorf("remote: %s: %s (a private or gated repository needs HF_TOKEN)", uri, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return File{}, fmt.Errorf("remote: %s: %s", uri, resp.Status)
	}
	// The Hub names an LFS file's content by X-Linked-Etag; the plain ETag
	// of the redirect target also works for http(s) files.
	f.ETag = cmp.Or(linked, resp.Header.Get("X-Linked-Etag"), resp.Header.Get("ETag"))
	if err := os.MkdirAll(slot, 0o755); err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	tmp, err := os.CreateTemp(slot, ".download-*")
	if err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), resp.Body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength {
		err = fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return File{}, fmt.Errorf("remote: download %s: %w", uri, err)
	}
	f.SHA256, f.Bytes, f.Downloaded = hex.EncodeToString(h.Sum(nil)), n, true
	if err := checkSum(f, o.SHA256); err != nil {
		return File{}, err
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	b, _ := json.MarshalIndent(f, "", "  ")
	if err := os.WriteFile(meta+".tmp", b, 0o644); err == nil {
		err = os.Rename(meta+".tmp", meta)
	}
	return f, nil
}

// ErrChecksum is returned (wrapped) when a file's SHA-256 is not the one
// expected.
var ErrChecksum = errors.New("remote: checksum mismatch")

func checkSum(f File, want string) error {
	if want != "" && !strings.EqualFold(want, f.SHA256) {
		return fmt.Errorf("%w: %s is %s, want %s", ErrChecksum, f.URI, f.SHA256, want)
	}
	return nil
}
