package executors

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the settings every driver URL accepts, parsed in one place:
//
//	memory=512MiB  address-space limit per run (also k, M, G, KiB, MiB, GiB)
//	timeout=5s     time limit per run (CPU time of its processes) or cell
//	wall=60s       wall-clock cap per run (default 4x timeout + 10s)
//	cpu=5s         CPU-time limit per run
//	pids=64        process limit per run (RLIMIT_NPROC)
//	output=64KiB   output cap per stream
//	file=64MiB     largest file a run may write
//	nofile=256     open-file limit
//	pool=4         warm sandbox instances for one-shot runs
//	image=NAME     image (docker); also given as host and path: docker://python:3.12-slim
type Options struct {
	Pool   int
	Limits Limits // zero fields mean "driver default"
	Image  string
	Extra  url.Values // driver-specific keys the caller allowed
}

// ParseOptions parses u's query (and host/path as the image). Unknown keys
// are an error unless listed in extraKeys, which land in Options.Extra.
func ParseOptions(u *url.URL, extraKeys ...string) (Options, error) {
	var o Options
	o.Extra = url.Values{}
	o.Image = strings.TrimPrefix(u.Host+u.Path, "/")
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return o, fmt.Errorf("executors: bad query %q: %w", u.RawQuery, err)
	}
	allowed := map[string]bool{}
	for _, k := range extraKeys {
		allowed[k] = true
	}
	// Every bad option is reported, in a stable order, so a user fixes the
	// URL in one go.
	var bad []string
	for _, k := range slices.Sorted(maps.Keys(q)) {
		vs := q[k]
		v := vs[len(vs)-1]
		var err error
		switch k {
		case "memory":
			o.Limits.MemoryBytes, err = ParseBytes(v)
		case "timeout":
			o.Limits.Timeout, err = parseDuration(v)
		case "wall":
			o.Limits.WallTimeout, err = parseDuration(v)
		case "cpu":
			o.Limits.CPUTime, err = parseDuration(v)
		case "pids":
			o.Limits.Processes, err = parsePositive(v)
		case "output":
			var n int64
			n, err = ParseBytes(v)
			o.Limits.OutputBytes = int(n)
		case "file":
			o.Limits.FileBytes, err = ParseBytes(v)
		case "nofile":
			o.Limits.OpenFiles, err = parsePositive(v)
		case "pool":
			o.Pool, err = parsePositive(v)
		case "image":
			o.Image = v
		default:
			if !allowed[k] {
				known := append([]string{"cpu", "file", "image", "memory", "nofile", "output", "pids", "pool", "timeout", "wall"}, extraKeys...)
				slices.Sort(known)
				bad = append(bad, fmt.Sprintf("unknown option %q in %s URL (known: %s)", k, u.Scheme, strings.Join(known, ", ")))
				continue
			}
			o.Extra[k] = vs
		}
		if err != nil {
			bad = append(bad, fmt.Sprintf("option %s=%q: %v", k, v, err))
		}
	}
	if len(bad) > 0 {
		return o, errors.New(strings.Join(bad, "; ")) // the driver names itself
	}
	return o, nil
}

// DefaultPoolSize is the number of warm instances when pool= is not given.
func DefaultPoolSize() int {
	n := runtime.GOMAXPROCS(0)
	if n < 2 {
		n = 2
	}
	if n > 8 {
		n = 8
	}
	return n
}

// ParseBytes parses sizes such as 512MiB, 64k, 1G or 1000000.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult := map[string]int64{"": 1, "b": 1,
		"k": 1 << 10, "kb": 1000, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1000 * 1000, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1000 * 1000 * 1000, "gib": 1 << 30}[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || mult == 0 {
		return 0, fmt.Errorf("not a size (want e.g. 512MiB): %q", s)
	}
	if n <= 0 {
		return 0, fmt.Errorf("size must be positive: %q", s)
	}
	return n * mult, nil
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		// A bare number means seconds.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0, fmt.Errorf("not a duration (want e.g. 5s): %q", s)
		}
		d = time.Duration(f * float64(time.Second))
	}
	if d <= 0 {
		return 0, fmt.Errorf("duration must be positive: %q", s)
	}
	return d, nil
}

func parsePositive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive integer, got %q", s)
	}
	return n, nil
}

// WithDefaults fills l's zero fields from d.
func (l Limits) WithDefaults(d Limits) Limits {
	l.Timeout = cmp.Or(l.Timeout, d.Timeout)
	l.WallTimeout = cmp.Or(l.WallTimeout, d.WallTimeout)
	l.MemoryBytes = cmp.Or(l.MemoryBytes, d.MemoryBytes)
	l.CPUTime = cmp.Or(l.CPUTime, d.CPUTime)
	l.Processes = cmp.Or(l.Processes, d.Processes)
	l.FileBytes = cmp.Or(l.FileBytes, d.FileBytes)
	l.OpenFiles = cmp.Or(l.OpenFiles, d.OpenFiles)
	l.OutputBytes = cmp.Or(l.OutputBytes, d.OutputBytes)
	return l
}

// Validate rejects negative limits.
func (l Limits) Validate() error {
	switch {
	case l.Timeout < 0:
		return fmt.Errorf("executors: negative timeout %v", l.Timeout)
	case l.WallTimeout < 0:
		return fmt.Errorf("executors: negative wall-clock cap %v", l.WallTimeout)
	case l.MemoryBytes < 0:
		return fmt.Errorf("executors: negative memory limit %d", l.MemoryBytes)
	case l.CPUTime < 0:
		return fmt.Errorf("executors: negative CPU-time limit %v", l.CPUTime)
	case l.Processes < 0:
		return fmt.Errorf("executors: negative process limit %d", l.Processes)
	case l.FileBytes < 0:
		return fmt.Errorf("executors: negative file-size limit %d", l.FileBytes)
	case l.OpenFiles < 0:
		return fmt.Errorf("executors: negative open-files limit %d", l.OpenFiles)
	case l.OutputBytes < 0:
		return fmt.Errorf("executors: negative output cap %d", l.OutputBytes)
	}
	return nil
}

// Valid reports whether lang is a language the runner knows.
func (lang Language) Valid() bool {
	switch lang {
	case Python, Bash, SQL:
		return true
	}
	_, ok := languages[lang] // lang.go
	return ok
}

// Validate checks a request before it reaches a sandbox.
func (r Request) Validate() error {
	if !r.Language.Valid() {
		return fmt.Errorf("executors: unknown language %q (want one of %s)", r.Language, LanguageNames())
	}
	if strings.TrimSpace(r.Code) == "" {
		return fmt.Errorf("executors: empty code")
	}
	if err := validateFiles(r.Files); err != nil {
		return err
	}
	return r.Limits.Validate()
}

func validateFiles(files map[string][]byte) error {
	for name := range files {
		bad := name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0)
		for _, p := range strings.Split(name, "/") {
			if p == "" || p == "." || p == ".." {
				bad = true
			}
		}
		if bad {
			return fmt.Errorf("executors: bad file name %q (want a relative path inside the scratch directory)", name)
		}
	}
	return nil
}
