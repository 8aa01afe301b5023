package audit

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

	"github.com/codefeedback/codefeedback/internal/shared"
	"github.com/codefeedback/codefeedback/schema"
)

// Spec is a known benchmark file: where it lives under a benchmark directory,
// where it is published, and the SHA-256 of the exact published bytes.
type Spec struct {
	Name   string
	File   string // path under the benchmark directory
	URL    string // public location at a fixed commit
	SHA256 string
}

// Known lists the benchmarks audit knows by name. The checksums are those of
// the published files (see the project's shared data README).
var Known = []Spec{
	{Name: "humaneval", File: "humaneval/HumanEval.jsonl.gz",
		URL:    "https://github.com/openai/human-eval/raw/6d43fb980f9fee3c892a914eda09951f772ad10d/data/HumanEval.jsonl.gz",
		SHA256: "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"},
	{Name: "mbpp", File: "mbpp/mbpp.jsonl",
		URL:    "https://raw.githubusercontent.com/google-research/google-research/master/mbpp/mbpp.jsonl",
		SHA256: "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f"},
	{Name: "humaneval+", File: "evalplus/HumanEvalPlus.jsonl.gz",
		URL:    "https://github.com/evalplus/humanevalplus_release/raw/200defce9e3429d28ca215b6dd061c0f7f31c18b/HumanEvalPlus.jsonl.gz",
		SHA256: "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101"},
	{Name: "mbpp+", File: "evalplus/MbppPlus.jsonl.gz",
		URL:    "https://github.com/evalplus/mbppplus_release/raw/dadf43da556a00f7bacd71cb154f2932757d9144/MbppPlus.jsonl.gz",
		SHA256: "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63"},
}

// Lookup returns the known benchmark called name (case-insensitive).
func Lookup(name string) (Spec, bool) {
	for _, s := range Known {
		if strings.EqualFold(s.Name, name) {
			return s, true
		}
	}
	return Spec{}, false
}

// EnvBenchDir overrides where benchmark files are looked for.
const EnvBenchDir = "CODEFEEDBACK_BENCH_DIR"

// BenchDir picks the benchmark directory: flag if set, else
// $CODEFEEDBACK_BENCH_DIR, else ../shared/data beside the repository (or
// beside the working directory) when present, else the user cache directory (~/.cache/codefeedback/bench),
// which Download fills.
func BenchDir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := os.Getenv(EnvBenchDir); d != "" {
		return d, nil
	}
	if d := shared.DataDir(); d != "" {
		return d, nil
	}
	if st, err := os.Stat(filepath.Join("..", "shared", "data")); err == nil && st.IsDir() {
		return filepath.Join("..", "shared", "data"), nil
	}
	return CacheDir()
}

// CacheDir is the user cache directory for downloaded benchmarks.
func CacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("audit: no user cache directory: %w", err)
	}
	return filepath.Join(c, "codefeedback", "bench"), nil
}

// ErrChecksum means a benchmark file's bytes are not the published ones.
var ErrChecksum = errors.New("checksum mismatch")

// Verify checks the SHA-256 of a known benchmark file under dir.
func Verify(dir string, s Spec) error {
	f, err := os.Open(filepath.Join(dir, s.File))
	if err != nil {
		return fmt.Errorf("audit: benchmark %s: %w", s.Name, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("audit: benchmark %s: read %s: %w", s.Name, f.Name(), err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Errorf("audit: benchmark %s: %s: %w: sha256 %s, want %s", s.Name, f.Name(), ErrChecksum, got, s.SHA256)
	}
	return nil
}

// Download fetches a known benchmark from s.URL into dir/s.File unless a
// file with the right checksum is there already. The bytes are checked
// before the file appears under its name, so a failed or tampered download
// leaves nothing behind.
func Download(ctx context.Context, c *http.Client, dir string, s Spec) error {
	dst := filepath.Join(dir, s.File)
	if Verify(dir, s) == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("audit: download %s: %s: %s", s.Name, s.URL, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".download-*")
	if err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	h := sha256.New()
	// 64 MiB is far above any known benchmark file.
	if _, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, 64<<20)); err != nil {
		tmp.Close()
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != s.SHA256 {
		return fmt.Errorf("audit: download %s from %s: %w: sha256 %s, want %s", s.Name, s.URL, ErrChecksum, got, s.SHA256)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("audit: download %s: %w", s.Name, err)
	}
	return nil
}

// LoadOptions choose how benchmarks are loaded.
type LoadOptions struct {
	Dir          string // benchmark directory (see BenchDir)
	SkipChecksum bool   // accept known benchmark files whose bytes differ from the published ones
}

// Load reads the benchmarks named in against: known names (humaneval, mbpp,
// humaneval+, mbpp+) from the benchmark directory, with their checksums
// verified, and anything else as a path to a problem file in any format the
// schema adapters read (HumanEval, MBPP, EvalPlus, LeetCode, native, CSV),
// named by its base name.
func Load(against []string, o LoadOptions) ([]Benchmark, error) {
	var out []Benchmark
	for _, a := range against {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		name, path := a, a
		if s, ok := Lookup(a); ok {
			name, path = s.Name, filepath.Join(o.Dir, s.File)
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("audit: benchmark %s not found at %s (set --bench-dir or $%s, or run with --download): %w",
					s.Name, path, EnvBenchDir, err)
			}
			if !o.SkipChecksum {
				if err := Verify(o.Dir, s); err != nil {
					return nil, err
				}
			}
		} else {
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("audit: %q is neither a known benchmark (%s) nor a readable file: %w", a, knownNames(), err)
			}
			name = filepath.Base(path)
		}
		ps, err := schema.LoadProblems(path)
		if err != nil {
			return nil, fmt.Errorf("audit: load benchmark %s: %w", name, err)
		}
		out = append(out, Benchmark{Name: name, Problems: ps})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("audit: no benchmarks named (known: %s)", knownNames())
	}
	return out, nil
}

func knownNames() string {
	n := make([]string, len(Known))
	for i, s := range Known {
		n[i] = s.Name
	}
	return strings.Join(n, ", ")
}
