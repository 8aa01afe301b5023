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

	"github.com/codefeedback/codefeedback/schema"
)

// IsURL reports whether s names a remote file rather than a local path.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "hf://") || strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// IsHub reports whether s is an hf:// URL.
func IsHub(s string) bool { return strings.HasPrefix(s, "hf://") }

// Options configure Fetch. Zero values take the defaults documented per field.
type Options struct {
	// CacheDir holds downloads (default os.UserCacheDir()/codefeedback/remote).
	CacheDir string
	// Dest, when set, is where the file goes instead of the cache (a
	// benchmark or InterCode file in its directory's layout). A file
	// already there that matches SHA256 (and Size) is kept without a
	// request; with no SHA256 any file there is kept.
	Dest string
	// Client does the HTTP requests (default: a client with a 10-minute
	// timeout per file).
	Client *http.Client
	// HubEndpoint is the Hub's base URL (default $HF_ENDPOINT, else
	// https://huggingface.co).
	HubEndpoint string
	// Token authorises Hub requests (default $HF_TOKEN). It is sent only to
	// the Hub's host, never to another (Go's client also drops it on a
	// redirect to another host, such as the Hub's CDN).
	Token string
	// SHA256, when set, must match the file; Size, when above 0, too.
	SHA256 string
	Size   int64
	// Progress, when set, gets a line when a download starts, resumes and
	// ends, and one per 64 MiB in between.
	Progress io.Writer
}

// File is a fetched file.
type File struct {
	URI    string `json:"uri"`  // as given
	URL    string `json:"url"`  // the http(s) URL it resolved to
	Path   string `json:"path"` // the local copy
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
	ETag   string `json:"etag,omitempty"`
	// Downloaded is false when the local copy was still current.
	Downloaded bool `json:"-"`
	// Resumed is true when the download continued a partial one.
	Resumed bool `json:"-"`
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

// Fetch returns a local copy of uri, downloading it unless the local copy
// is current: in the cache, revalidated by its ETag; at Dest, checked
// against SHA256. A download goes to PATH.part and is renamed once its size
// and SHA-256 are right, so an interrupted one never looks complete; the
// next Fetch resumes it with a Range request when the bytes it continues
// are provably the same file (a pinned SHA256, or the ETag the part came
// with), and starts over otherwise. A part that fails its checksum is
// deleted.
func Fetch(ctx context.Context, uri string, o Options) (File, error) {
	u, err := Resolve(uri, o)
	if err != nil {
		return File{}, err
	}
	f := File{URI: uri, URL: u, Path: o.Dest}
	meta := ""
	var cached File
	if o.Dest == "" {
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
		f.Path, meta = filepath.Join(slot, name), filepath.Join(slot, "meta.json")
		if b, err := os.ReadFile(meta); err == nil && json.Unmarshal(b, &cached) == nil && cached.URL == u {
			if _, err := os.Stat(f.Path); err != nil {
				cached = File{}
			}
		} else {
			cached = File{}
		}
	} else if st, err := os.Stat(o.Dest); err == nil && st.Mode().IsRegular() {
		if o.SHA256 == "" {
			f.Bytes = st.Size()
			return f, nil
		}
		if got, err := hashFile(o.Dest); err == nil && strings.EqualFold(got, o.SHA256) && (o.Size <= 0 || st.Size() == o.Size) {
			f.SHA256, f.Bytes = got, st.Size()
			return f, nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	part := f.Path + ".part"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return File{}, fmt.Errorf("remote: %s: %w", uri, err)
	}
	hub := strings.TrimRight(cmp.Or(o.HubEndpoint, os.Getenv("HF_ENDPOINT"), "https://huggingface.co"), "/")
	if token := cmp.Or(o.Token, os.Getenv("HF_TOKEN")); token != "" && sameHost(u, hub) {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if cached.ETag != "" {
		req.Header.Set("If-None-Match", cached.ETag)
	}
	// A partial download is continued when its bytes can be proved to be
	// the same file's: by the pinned checksum at the end, or by If-Range
	// with the ETag it came with (the server then sends all of it if the
	// file changed).
	have := int64(0)
	if st, err := os.Stat(part); err == nil && st.Size() > 0 && (o.Size <= 0 || st.Size() < o.Size) {
		etag, _ := os.ReadFile(part + ".etag")
		if o.SHA256 != "" || len(etag) > 0 {
			have = st.Size()
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-", have))
			if len(etag) > 0 {
				req.Header.Set("If-Range", string(etag))
			}
		}
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
		return cached, checkSum(cached, o.SHA256, 0)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return File{}, fmt.Errorf("remote: %s: %s (a private or gated repository needs HF_TOKEN)", uri, resp.Status)
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		os.Remove(part) // the part is no prefix of the file: the next try starts over
		os.Remove(part + ".etag")
		return File{}, fmt.Errorf("remote: %s: %s for the partial download; it was discarded, try again", uri, resp.Status)
	case resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent:
		return File{}, fmt.Errorf("remote: %s: %s", uri, resp.Status)
	}
	// The Hub names an LFS file's content by X-Linked-Etag; the plain ETag
	// of the redirect target also works for http(s) files.
	f.ETag = cmp.Or(linked, resp.Header.Get("X-Linked-Etag"), resp.Header.Get("ETag"))
	flags := os.O_CREATE | os.O_WRONLY | os.O_TRUNC
	h := sha256.New()
	if resp.StatusCode == http.StatusPartialContent && have > 0 && strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", have)) {
		// Hash what is there, then append the rest.
		old, err := os.Open(part)
		if err == nil {
			_, err = io.Copy(h, old)
			old.Close()
		}
		if err != nil {
			return File{}, fmt.Errorf("remote: resume %s: %w", uri, err)
		}
		flags, f.Resumed = os.O_WRONLY|os.O_APPEND, true
	} else {
		have = 0
		if resp.StatusCode != http.StatusOK {
			return File{}, fmt.Errorf("remote: %s: %s without the range asked for", uri, resp.Status)
		}
	}
	out, err := os.OpenFile(part, flags, 0o644)
	if err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	if f.ETag != "" && o.SHA256 == "" {
		_ = os.WriteFile(part+".etag", []byte(f.ETag), 0o644) // lets an interrupted download resume
	}
	total := int64(-1)
	if resp.ContentLength >= 0 {
		total = have + resp.ContentLength
	}
	pw := &progress{w: o.Progress, uri: uri, done: have, total: total, start: time.Now()}
	pw.begin(f.Resumed)
	var body io.Reader = resp.Body
	if o.Size > 0 {
		body = io.LimitReader(body, o.Size-have+1) // a longer file is wrong: stop reading it
	}
	n, err := io.Copy(io.MultiWriter(out, h, pw), body)
	if err == nil && resp.ContentLength >= 0 && n != resp.ContentLength && (o.Size <= 0 || have+n <= o.Size) {
		err = fmt.Errorf("got %d of %d bytes", n, resp.ContentLength)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// The part stays for the next Fetch to resume.
		return File{}, fmt.Errorf("remote: download %s (%d bytes kept to resume): %w", uri, have+n, err)
	}
	f.SHA256, f.Bytes, f.Downloaded = hex.EncodeToString(h.Sum(nil)), have+n, true
	if err := checkSum(f, o.SHA256, o.Size); err != nil {
		os.Remove(part) // a wrong file is not resumed
		os.Remove(part + ".etag")
		return File{}, err
	}
	if err := os.Rename(part, f.Path); err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	os.Remove(part + ".etag")
	if err := syncDir(filepath.Dir(f.Path)); err != nil {
		return File{}, fmt.Errorf("remote: %w", err)
	}
	pw.end()
	if meta != "" {
		// Best effort: without the note the next Fetch only downloads again.
		_ = schema.WriteJSONAtomic(meta, f)
	}
	return f, nil
}

// sameHost reports whether URL a is on the host of base URL b.
func sameHost(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && strings.EqualFold(ua.Host, ub.Host)
}

func hashFile(p string) (string, error) {
	fh, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.Copy(h, fh); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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

// progress writes a download's progress lines.
type progress struct {
	w           io.Writer
	uri         string
	done, total int64
	next        int64
	start       time.Time
}

const progressStep = 64 << 20

func (p *progress) begin(resumed bool) {
	if p.w == nil {
		return
	}
	p.next = p.done + progressStep
	size := "size unknown"
	if p.total >= 0 {
		size = fmt.Sprintf("%d bytes", p.total)
	}
	if resumed {
		fmt.Fprintf(p.w, "resuming %s at %d of %s\n", p.uri, p.done, size)
		return
	}
	fmt.Fprintf(p.w, "downloading %s (%s)\n", p.uri, size)
}

func (p *progress) Write(b []byte) (int, error) {
	p.done += int64(len(b))
	if p.w != nil && p.done >= p.next {
		p.next = p.done + progressStep
		if p.total > 0 {
			fmt.Fprintf(p.w, "  %s: %d MiB of %d MiB\n", p.uri, p.done>>20, p.total>>20)
		} else {
			fmt.Fprintf(p.w, "  %s: %d MiB\n", p.uri, p.done>>20)
		}
	}
	return len(b), nil
}

func (p *progress) end() {
	if p.w != nil {
		fmt.Fprintf(p.w, "downloaded %s: %d bytes in %.1fs\n", p.uri, p.done, time.Since(p.start).Seconds())
	}
}

// ErrChecksum is returned (wrapped) when a file's SHA-256 is not the one
// expected.
var ErrChecksum = errors.New("remote: checksum mismatch")

func checkSum(f File, want string, size int64) error {
	if (want != "" && !strings.EqualFold(want, f.SHA256)) || (size > 0 && f.Bytes != size) {
		w := want
		if size > 0 {
			w = fmt.Sprintf("%d bytes with %s", size, want)
		}
		return fmt.Errorf("%w: %s: %d bytes with sha256 %s, want %s", ErrChecksum, f.URI, f.Bytes, f.SHA256, w)
	}
	return nil
}
