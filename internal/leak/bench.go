package leak

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/schema"
)

// LoadOptions choose how benchmarks are loaded.
type LoadOptions struct {
	Dir          string // benchmark directory (see benchmarks.Dir)
	SkipChecksum bool   // accept known benchmark files whose bytes differ from the published ones
}

// Load reads the benchmarks named in against: names the registry knows
// (benchmarks.Known) from the benchmark directory, checksum verified, and
// anything else as a path to a problem file in any format the schema
// adapters read (HumanEval, MBPP, EvalPlus, LeetCode, native, CSV), named by
// its base name. A missing known file wraps benchmarks.ErrMissing and says
// how to fetch it.
func Load(against []string, o LoadOptions) ([]Benchmark, error) {
	var out []Benchmark
	for _, a := range against {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		name, path := a, a
		if s, ok := benchmarks.Lookup(a); ok {
			name, path = s.Name, s.Path(o.Dir)
			err := benchmarks.Verify(path, s)
			if err != nil && (!o.SkipChecksum || !benchmarks.Present(o.Dir, s)) {
				return nil, fmt.Errorf("audit: %w", err)
			}
		} else {
			if _, err := os.Stat(path); err != nil {
				return nil, fmt.Errorf("audit: %q is neither a known benchmark (%s) nor a readable file: %w", a, benchmarks.Names(), err)
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
		return nil, fmt.Errorf("audit: no benchmarks named (known: %s)", benchmarks.Names())
	}
	return out, nil
}
