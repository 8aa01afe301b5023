// Package benchmarks is the one registry of the public benchmarks the tool
// audits against and evaluates on (HumanEval, MBPP full and sanitized,
// HumanEval+ and MBPP+): their names, file names, public locations and the
// SHA-256 of the published bytes, and the directory that holds them (the
// user cache, filled by Fetch, or a directory the user names). Product code
// finds benchmark files only through this package.
package benchmarks

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/internal/remote"
)

// Spec is one known benchmark file.
type Spec struct {
	// Name is what users type (--against, --benchmarks, bench fetch).
	Name string
	// File is the path under a benchmark directory. The layout (humaneval/,
	// mbpp/, evalplus/) is that of the published repositories.
	File string
	// URLs are the public locations, tried in order. Each must serve the
	// exact bytes SHA256 names.
	URLs []string
	// SHA256 is the hex digest of the published file; Size its length.
	SHA256 string
	Size   int64
	// About says what the file holds, for `bench list`.
	About string
}

// Path returns the file's location under dir.
func (s Spec) Path(dir string) string { return filepath.Join(dir, filepath.FromSlash(s.File)) }

// Names of the known benchmarks.
const (
	HumanEval     = "humaneval"
	MBPP          = "mbpp"
	MBPPSanitized = "mbpp-sanitized"
	HumanEvalPlus = "humaneval+"
	MBPPPlus      = "mbpp+"
)

// Known lists every benchmark the registry knows, in the order `bench fetch`
// fetches them. The checksums were computed from copies whose provenance is
// recorded beside them: HumanEval and the EvalPlus files are the files in
// their repositories at the commits in the URLs; both MBPP files are
// byte-identical to upstream master (their checksums equal those Hugging
// Face `datasets` recorded for the upstream URLs). The MBPP URLs name the
// master branch because upstream has no tag; a change upstream fails the
// checksum rather than passing silently.
var Known = []Spec{
	{Name: HumanEval, File: "humaneval/HumanEval.jsonl.gz",
		URLs:   []string{"https://github.com/openai/human-eval/raw/6d43fb980f9fee3c892a914eda09951f772ad10d/data/HumanEval.jsonl.gz"},
		SHA256: "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef", Size: 44877,
		About: "OpenAI HumanEval, 164 problems (MIT)"},
	{Name: MBPP, File: "mbpp/mbpp.jsonl",
		URLs:   []string{"https://raw.githubusercontent.com/google-research/google-research/master/mbpp/mbpp.jsonl"},
		SHA256: "ccf64ceae9c5403bf50a044cb6d505bfd2a2963ee58338ba268fd65beab92a9f", Size: 563743,
		About: "MBPP full, 974 problems (CC BY 4.0)"},
	{Name: MBPPSanitized, File: "mbpp/sanitized-mbpp.json",
		URLs:   []string{"https://raw.githubusercontent.com/google-research/google-research/master/mbpp/sanitized-mbpp.json"},
		SHA256: "ca95deaa9a01ef0a6f439f88bcf0dd3db3563d22f22aad6cae04ebb9a8d8c8e9", Size: 255053,
		About: "MBPP sanitized, 427 problems (CC BY 4.0)"},
	// The EvalPlus release repositories' files at the release commits; the
	// release assets EvalPlus itself downloads follow as a second location
	// (their bytes were not compared with the pin; the checksum decides).
	{Name: HumanEvalPlus, File: "evalplus/HumanEvalPlus.jsonl.gz",
		URLs: []string{"https://github.com/evalplus/humanevalplus_release/raw/200defce9e3429d28ca215b6dd061c0f7f31c18b/HumanEvalPlus.jsonl.gz",
			"https://github.com/evalplus/humanevalplus_release/releases/download/v0.1.10/HumanEvalPlus.jsonl.gz"},
		SHA256: "272720b90ac375502c8ed23cd791c2a93dfb22a911641a494da74a426c09f101", Size: 925932,
		About: "EvalPlus HumanEval+ v0.1.10, 164 problems (Apache-2.0)"},
	{Name: MBPPPlus, File: "evalplus/MbppPlus.jsonl.gz",
		URLs: []string{"https://github.com/evalplus/mbppplus_release/raw/dadf43da556a00f7bacd71cb154f2932757d9144/MbppPlus.jsonl.gz",
			"https://github.com/evalplus/mbppplus_release/releases/download/v0.2.0/MbppPlus.jsonl.gz"},
		SHA256: "af43697e8791c4c149bdfd6b489d8b5412507551ac20e28a439f650b8225db63", Size: 336032,
		About: "EvalPlus MBPP+ v0.2.0, 378 problems (Apache-2.0)"},
}

// Lookup returns the known benchmark called name (case-insensitive; "mbpp-sanitized"
// is also "sanitized-mbpp").
func Lookup(name string) (Spec, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "sanitized-mbpp" {
		name = MBPPSanitized
	}
	for _, s := range Known {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names returns the known names joined by ", ", for messages.
func Names() string {
	n := make([]string, len(Known))
	for i, s := range Known {
		n[i] = s.Name
	}
	return strings.Join(n, ", ")
}

// EnvDir names the variable that overrides the benchmark directory.
const EnvDir = "CODEFEEDBACK_BENCH_DIR"

// FetchHint is what to tell a user whose benchmark directory lacks a file.
const FetchHint = "run `codefeedback bench fetch`"

// CacheDir is the user cache of fetched benchmarks:
// os.UserCacheDir()/codefeedback/benchmarks.
func CacheDir() (string, error) {
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("benchmarks: no user cache directory (set $%s or --bench-dir): %w", EnvDir, err)
	}
	return filepath.Join(c, "codefeedback", "benchmarks"), nil
}

// Dir picks the benchmark directory: flag when set, else $CODEFEEDBACK_BENCH_DIR,
// else the user cache.
func Dir(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	return CacheDir()
}

// ErrChecksum means a file's bytes are not the published ones (the remote
// fetcher's error, so a download and a check of a file on disk match alike).
var ErrChecksum = remote.ErrChecksum

// ErrMissing means a known benchmark's file is not in the directory.
var ErrMissing = errors.New("benchmark file not found")

// Locate returns the path of a known benchmark under dir after checking its
// SHA-256. The error wraps ErrMissing (with how to fetch it) or ErrChecksum.
func Locate(dir string, s Spec) (string, error) {
	p := s.Path(dir)
	if err := Verify(p, s); err != nil {
		return "", err
	}
	return p, nil
}

// Present reports whether a known benchmark's file exists under dir (its
// checksum is not read).
func Present(dir string, s Spec) bool {
	st, err := os.Stat(s.Path(dir))
	return err == nil && st.Mode().IsRegular()
}
