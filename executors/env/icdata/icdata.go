// Package icdata knows InterCode's published data files (task files, setup
// scripts, database dumps, CTF assets and the logged trajectories of its
// paper) at a pinned commit of its public repository, with their SHA-256, and
// fetches them into a user cache laid out as the repository is (so the
// loaders find a setup script or a dump beside its task file).
package icdata

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/codefeedback/codefeedback/internal/remote"
)

//go:embed manifest.json
var manifestJSON []byte

// File is one pinned file.
type File struct {
	Path   string `json:"path"` // in the repository, slash-separated
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest lists the pinned files. Unavailable names files of that commit
// whose checksum is not pinned (the largest ones: BIRD's dump, three CTF disk
// images, APPS, SWE-bench): fetch skips them unless told to take them
// unverified.
type Manifest struct {
	Repository  string   `json:"repository"`
	Commit      string   `json:"commit"`
	Files       []File   `json:"files"`
	Unavailable []string `json:"unavailable"`
}

// Pinned is the embedded manifest.
func Pinned() Manifest {
	var m Manifest
	if err := json.Unmarshal(manifestJSON, &m); err != nil {
		panic("icdata: embedded manifest: " + err.Error())
	}
	return m
}

// BaseURL is where a manifest's files are downloaded from.
func (m Manifest) BaseURL() string {
	return "https://raw.githubusercontent.com/" + m.Repository + "/" + m.Commit
}

// DefaultDir is $CODEFEEDBACK_INTERCODE_DIR, else the user cache
// (~/.cache/codefeedback/intercode/<commit>).
func DefaultDir(m Manifest) (string, error) {
	if d := os.Getenv("CODEFEEDBACK_INTERCODE_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("icdata: no user cache directory (set CODEFEEDBACK_INTERCODE_DIR): %w", err)
	}
	return filepath.Join(d, "codefeedback", "intercode", m.Commit[:12]), nil
}

// Options configure Fetch.
type Options struct {
	Dir        string       // destination; files keep their repository paths
	BaseURL    string       // empty: the manifest's
	Only       []string     // path prefixes to fetch ("data/sql/spider/"); empty: all
	Unverified bool         // also fetch the unavailable files, without a checksum
	Client     *http.Client // nil: a client with a 10-minute timeout
	Log        io.Writer    // progress lines; nil: none
}

// Report says what Fetch did.
type Report struct {
	Fetched, Present, Skipped int
	Bytes                     int64
}

// ErrChecksum: a downloaded file does not match its pinned SHA-256 (the
// remote fetcher's error).
var ErrChecksum = remote.ErrChecksum

// Fetch downloads the manifest's files that are missing or differ into
// opts.Dir through the one fetcher of remote files (internal/remote), which
// verifies size and SHA-256 before a file takes its name and resumes a cut
// download on the next Fetch.
func Fetch(ctx context.Context, m Manifest, opts Options) (Report, error) {
	var rep Report
	if opts.Dir == "" {
		return rep, errors.New("icdata: no destination directory")
	}
	base := opts.BaseURL
	if base == "" {
		base = m.BaseURL()
	}
	c := opts.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Minute}
	}
	files := m.Files
	if opts.Unverified {
		for _, p := range m.Unavailable {
			files = append(files, File{Path: p, Size: -1})
		}
	}
	for _, f := range files {
		if !wanted(f.Path, opts.Only) {
			continue
		}
		dst, err := localPath(opts.Dir, f.Path)
		if err != nil {
			return rep, err
		}
		u := base + "/" + pathEscape(f.Path)
		if remote.IsHub(base) {
			u = base + "/" + f.Path // an hf:// URL is escaped when it is resolved
		}
		got, err := remote.Fetch(ctx, u, remote.Options{Dest: dst, SHA256: f.SHA256, Size: f.Size, Client: c})
		if err != nil {
			return rep, fmt.Errorf("icdata: %s: %w", f.Path, err)
		}
		if !got.Downloaded {
			rep.Present++
			continue
		}
		n := got.Bytes
		rep.Fetched++
		rep.Bytes += n
		if opts.Log != nil {
			note := ""
			if f.SHA256 == "" {
				note = " (unverified: no pinned checksum)"
			}
			fmt.Fprintf(opts.Log, "fetched %s (%d bytes)%s\n", f.Path, n, note)
		}
	}
	return rep, nil
}

func wanted(p string, only []string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if strings.HasPrefix(p, o) {
			return true
		}
	}
	return false
}

// localPath maps a repository path into dir, refusing anything that would
// leave it.
func localPath(dir, p string) (string, error) {
	c := path.Clean(p)
	if c != p || path.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || strings.Contains(p, "\\") {
		return "", fmt.Errorf("icdata: bad path %q in manifest", p)
	}
	return filepath.Join(dir, filepath.FromSlash(c)), nil
}

func pathEscape(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(urlPathEscape(s), "+", "%2B")
	}
	return strings.Join(parts, "/")
}

func urlPathEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}
