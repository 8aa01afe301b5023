package report

import (
	"bufio"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/pipeline"
)

// benchmarkLicenses are the licences of the public benchmark files, by the
// registry's names (see internal/benchmarks, which pins their bytes).
var benchmarkLicenses = map[string]string{
	benchmarks.HumanEval:     "mit",
	benchmarks.MBPP:          "cc-by-4.0",
	benchmarks.MBPPSanitized: "cc-by-4.0",
	benchmarks.HumanEvalPlus: "apache-2.0",
	benchmarks.MBPPPlus:      "apache-2.0",
}

// InputLicense is what the card knows about one input's licence.
type InputLicense struct {
	Path    string `json:"path"`
	License string `json:"license,omitempty"` // SPDX-style id as the Hub spells it; "" when unknown
	From    string `json:"from,omitempty"`    // where it was found
}

// inputLicense finds an input's licence: a public benchmark file the
// registry pins by SHA-256; a sidecar FILE.license holding the id; or a
// dataset card (README.md) in the file's directory whose YAML header names
// a license, as Hugging Face dataset repositories have.
func inputLicense(in pipeline.InputRecord) InputLicense {
	l := InputLicense{Path: in.Path}
	for _, s := range benchmarks.Known {
		if in.SHA256 != "" && s.SHA256 == in.SHA256 && benchmarkLicenses[s.Name] != "" {
			l.License, l.From = benchmarkLicenses[s.Name], "the "+s.Name+" benchmark file (by SHA-256)"
			return l
		}
	}
	if b, err := os.ReadFile(in.Path + ".license"); err == nil {
		if id := strings.ToLower(strings.TrimSpace(string(b))); id != "" && !strings.ContainsAny(id, " \n") {
			l.License, l.From = id, filepath.Base(in.Path)+".license"
			return l
		}
	}
	if id := cardLicense(filepath.Join(filepath.Dir(in.Path), "README.md")); id != "" {
		l.License, l.From = id, "README.md beside it"
	}
	return l
}

// cardLicense reads the license of a dataset card's YAML header.
func cardLicense(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return ""
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			return ""
		}
		if v, ok := strings.CutPrefix(line, "license:"); ok {
			v = strings.Trim(strings.TrimSpace(v), `"'`)
			if v != "" && v != "unknown" && !strings.ContainsAny(v, "[{ ") {
				return strings.ToLower(v)
			}
			return ""
		}
	}
	return ""
}

// deriveLicense is the card's licence from the inputs': the one licence
// when every input has the same, the list of them when they differ (the
// data carries each), "unknown" when any input's licence is unknown.
// override (--license) wins.
func deriveLicense(override string, ins []InputLicense) any {
	if override != "" {
		return override
	}
	set := map[string]bool{}
	for _, l := range ins {
		if l.License == "" {
			return "unknown"
		}
		set[l.License] = true
	}
	if len(set) == 0 {
		return "unknown"
	}
	ids := slices.Sorted(maps.Keys(set))
	if len(ids) == 1 {
		return ids[0]
	}
	return ids
}
