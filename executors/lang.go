package executors

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Languages beyond Python, Bash and SQL: runners inside the sandbox
// (executors/langs.py), on every driver, with toolchains from Debian.
const (
	JavaScript Language = "javascript" // node
	TypeScript Language = "typescript" // tsc (type-checked), then node
	C          Language = "c"          // gcc -std=gnu17
	CPP        Language = "cpp"        // g++ -std=gnu++17
	Go         Language = "go"         // go build (package main, a go.mod is added when absent)
	Java       Language = "java"       // javac, then java; the file is named after the public class
	Rust       Language = "rust"       // rustc --edition 2021
	Ruby       Language = "ruby"
	PHP        Language = "php"
	Lua        Language = "lua" // lua5.4
)

type languageInfo struct {
	compiled bool
	aliases  []string // fence names and common spellings
	debian   []string // packages that bring the toolchain
	tools    []string // what must be on PATH in the sandbox (as langs.py's LANGS)
}

var languages = map[Language]languageInfo{
	JavaScript: {aliases: []string{"js", "node", "nodejs", "mjs"}, debian: []string{"nodejs"}, tools: []string{"node"}},
	TypeScript: {compiled: true, aliases: []string{"ts"}, debian: []string{"nodejs", "node-typescript"}, tools: []string{"node", "tsc"}},
	C:          {compiled: true, aliases: []string{"h"}, debian: []string{"gcc", "libc6-dev"}, tools: []string{"gcc"}},
	CPP:        {compiled: true, aliases: []string{"c++", "cxx", "cc", "hpp"}, debian: []string{"g++"}, tools: []string{"g++"}},
	Go:         {compiled: true, aliases: []string{"golang"}, debian: []string{"golang-go"}, tools: []string{"go"}},
	Java:       {compiled: true, debian: []string{"openjdk-17-jdk-headless"}, tools: []string{"javac", "java"}},
	Rust:       {compiled: true, aliases: []string{"rs"}, debian: []string{"rustc"}, tools: []string{"rustc"}},
	Ruby:       {aliases: []string{"rb"}, debian: []string{"ruby"}, tools: []string{"ruby"}},
	PHP:        {debian: []string{"php-cli"}, tools: []string{"php"}},
	Lua:        {debian: []string{"lua5.4"}, tools: []string{"lua5.4"}},
}

// AllLanguages lists every language the runner knows, sorted.
func AllLanguages() []Language {
	out := []Language{Python, Bash, SQL}
	for l := range languages {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// LanguageNames is AllLanguages joined for messages.
func LanguageNames() string {
	var s []string
	for _, l := range AllLanguages() {
		s = append(s, string(l))
	}
	return strings.Join(s, ", ")
}

// ParseLanguage maps a name or a code fence's info string ("js", "c++",
// "golang", "Python3") to a Language.
func ParseLanguage(s string) (Language, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	switch s {
	case "python", "python3", "py":
		return Python, true
	case "bash", "sh", "shell":
		return Bash, true
	case "sql", "sqlite":
		return SQL, true
	}
	if _, ok := languages[Language(s)]; ok {
		return Language(s), true
	}
	for l, info := range languages {
		for _, a := range info.aliases {
			if a == s {
				return l, true
			}
		}
	}
	return "", false
}

// Compiled reports whether lang has a compile step (and so a compile
// cache and compile limits).
func (lang Language) Compiled() bool { return languages[lang].compiled }

// Sessions reports whether Open supports lang.
func (lang Language) Sessions() bool {
	return lang == Python || lang == Bash || lang == SQL || lang == JavaScript
}

// DebianPackages names the packages that bring lang's toolchain.
func (lang Language) DebianPackages() []string { return languages[lang].debian }

// DefaultCompileLimits bound a compile step whose request leaves a limit at
// zero: compilers need more time, memory and threads than most programs.
var DefaultCompileLimits = Limits{
	Timeout:     60 * time.Second,
	MemoryBytes: 2 << 30,
	CPUTime:     60 * time.Second,
	Processes:   256,
	FileBytes:   256 << 20,
	OpenFiles:   1024,
	OutputBytes: 64 << 10,
}

// ErrNoToolchain means the sandbox lacks the language's compiler or
// interpreter (the run did not start).
var ErrNoToolchain = errors.New("toolchain not installed")

// LanguageStatus says whether a sandbox can run a language.
type LanguageStatus struct {
	Language  Language `json:"lang"`
	Available bool     `json:"available"`
	Missing   string   `json:"missing,omitempty"` // the first tool not on PATH
	Tools     []string `json:"tools"`             // paths of the tools found
}

// LanguageLister is an optional capability of an Executor: it asks a
// sandbox instance which toolchains it has. Pool-based executors (both
// drivers) implement it.
type LanguageLister interface {
	Languages(ctx context.Context) ([]LanguageStatus, error)
}

// Languages asks one of ex's sandboxes what it can run; Python, Bash and
// SQL are always there. An executor without the LanguageLister capability
// (a driver's wrapper around the pool) is asked with a bash probe that
// looks each tool up on the sandbox's PATH.
func Languages(ctx context.Context, ex Executor) ([]LanguageStatus, error) {
	if ll, ok := ex.(LanguageLister); ok {
		return ll.Languages(ctx)
	}
	var probe strings.Builder
	seen := map[string]bool{}
	for _, info := range languages {
		for _, t := range info.tools {
			if !seen[t] {
				seen[t] = true
				fmt.Fprintf(&probe, "printf '%%s=%%s\\n' %s \"$(command -v %s)\"\n", t, t)
			}
		}
	}
	res, err := ex.Run(ctx, Request{Language: Bash, Code: probe.String(), Limits: Limits{Timeout: 30 * time.Second}})
	if err != nil {
		return nil, fmt.Errorf("executors: listing languages: %w", err)
	}
	if !res.OK() {
		return nil, fmt.Errorf("executors: listing languages: the probe failed (exit %d): %s", res.ExitCode, res.Stderr)
	}
	found := map[string]string{}
	for _, line := range strings.Split(res.Stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && v != "" {
			found[k] = v
		}
	}
	out := []LanguageStatus{{Language: Python, Available: true}, {Language: Bash, Available: true}, {Language: SQL, Available: true}}
	for l, info := range languages {
		st := LanguageStatus{Language: l, Available: true}
		for _, t := range info.tools {
			if p := found[t]; p != "" {
				st.Tools = append(st.Tools, p)
			} else if st.Available {
				st.Available, st.Missing = false, t
			}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Language < out[j].Language })
	return out, nil
}

// Languages implements LanguageLister.
func (p *pool) Languages(ctx context.Context) ([]LanguageStatus, error) {
	slot, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	inst := p.insts[slot]
	p.mu.Unlock()
	if inst == nil || inst.dead() {
		if inst != nil {
			inst.close()
		}
		if inst, err = startInstance(ctx, p.l, slot, p.opts.StartTimeout); err != nil {
			p.release(slot, nil, false)
			return nil, fmt.Errorf("executors: %s: %w", p.info.Driver, err)
		}
	}
	resp, err := inst.call(ctx, wireRequest{Op: "langs"}, p.opts.StartTimeout)
	if err != nil || resp.Error != "" {
		p.release(slot, inst, true)
		return nil, fmt.Errorf("executors: %s: listing languages: %v%s", p.info.Driver, err, resp.Error)
	}
	p.release(slot, inst, false)
	out := []LanguageStatus{{Language: Python, Available: true}, {Language: Bash, Available: true}, {Language: SQL, Available: true}}
	out = append(out, resp.Langs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Language < out[j].Language })
	return out, nil
}

// Languages implements LanguageLister by asking the wrapped executor.
func (ce *cachingExecutor) Languages(ctx context.Context) ([]LanguageStatus, error) {
	return Languages(ctx, ce.ex)
}

// Diagnostics patterns, compile phase.
var (
	reGCC   = regexp.MustCompile(`(?m)^(?:\./)?([\w./-]+\.(?:c|cpp|cc|h|hpp)):(\d+):(?:\d+:)? (?:fatal )?error: .*$`)
	reGo    = regexp.MustCompile(`(?m)^(?:\./)?([\w./-]+\.go):(\d+):(?:\d+:)? .*$`)
	reJavac = regexp.MustCompile(`(?m)^([\w./-]+\.java):(\d+): error: .*$`)
	reRustE = regexp.MustCompile(`(?m)^error(?:\[E\d+\])?: .*$`)
	reRustL = regexp.MustCompile(`(?m)^\s*--> ([\w./-]+\.rs):(\d+):\d+`)
	reTSC   = regexp.MustCompile(`(?m)^([\w./-]+\.ts)\((\d+),\d+\): error .*$`)
	reLD    = regexp.MustCompile(`(?m)^.*(?:undefined reference to|collect2: error).*$`)
)

// Diagnostics patterns, run phase.
var (
	reJSErr    = regexp.MustCompile(`(?m)^([A-Z][\w$]*(?:Error|Exception)|Error)(?: \[[^\]]*\])?(?::.*)?$`)
	reJSLine   = regexp.MustCompile(`(?:main|cell-\d+)\.js:(\d+)`) // one-shot runs, session cells
	reJava     = regexp.MustCompile(`(?m)^Exception in thread "[^"]*" ([\w.$]+)(?::.*)?$`)
	reJavaLine = regexp.MustCompile(`\((\w+)\.java:(\d+)\)`)
	reGoPanic  = regexp.MustCompile(`(?m)^(?:panic|fatal error): .*$`)
	reGoFrame  = regexp.MustCompile(`(?m)^main\.[^\n]*\n\t[^\n]*?\.go:(\d+)`)
	reRustOld  = regexp.MustCompile(`(?m)^thread '[^']*' panicked at '(.*)', ([\w./-]+\.rs):(\d+):\d+`)
	reRustNew  = regexp.MustCompile(`(?m)^thread '[^']*' panicked at ([\w./-]+\.rs):(\d+):\d+:\n(.*)$`)
	reCxxThrow = regexp.MustCompile(`(?m)^terminate called after throwing an instance of '([^']+)'\n(?:\s+what\(\):\s+(.*))?`)
	reCAssert  = regexp.MustCompile(`(?m)^.*?([\w.]+\.(?:c|cpp)):(\d+): .*Assertion .* failed\.$`)
	reRuby     = regexp.MustCompile(`(?m)^[\w./-]*main\.rb:(\d+):in [^:]*: (.*) \(([\w:]+)\)$`)
	reRubySyn  = regexp.MustCompile(`(?m)^[\w./-]*main\.rb:(\d+): (syntax error.*)$`)
	rePHP      = regexp.MustCompile(`(?m)(?:PHP )?(?:Fatal|Parse) error:\s+(?:Uncaught )?(?:(\w+): )?(.*?) in \S*main\.php(?::(\d+)| on line (\d+))`)
	reLua      = regexp.MustCompile(`(?m)^lua5\.4: (?:[\w./-]*main\.lua:(\d+): )?(.*)$`)
)

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// ParseDiagnostics reads a failed run of a language other than Python:
// for a failed compile (phase "compile") the compiler's first error and the
// source line it names (exception "CompileError"); otherwise the uncaught
// error of the run (its type where the language names one, "panic" for Go
// and Rust) with its message line and the program's line. All are empty
// when stderr shows nothing to parse (e.g. a C program killed by SIGSEGV).
func ParseDiagnostics(lang Language, phase, stderr string) (exception, message string, line int) {
	if phase == "compile" {
		exception = "CompileError"
		switch lang {
		case C, CPP:
			if m := reGCC.FindStringSubmatch(stderr); m != nil {
				return exception, m[0], atoi(m[2])
			}
			if m := reLD.FindString(stderr); m != "" {
				return exception, strings.TrimSpace(m), 0
			}
		case Go:
			if m := reGo.FindStringSubmatch(stderr); m != nil {
				return exception, strings.TrimPrefix(m[0], "./"), atoi(m[2])
			}
		case Java:
			if m := reJavac.FindStringSubmatch(stderr); m != nil {
				return exception, m[0], atoi(m[2])
			}
		case Rust:
			if m := reRustE.FindStringIndex(stderr); m != nil {
				msg := stderr[m[0]:m[1]]
				if l := reRustL.FindStringSubmatch(stderr[m[1]:]); l != nil {
					return exception, msg, atoi(l[2])
				}
				return exception, msg, 0
			}
		case TypeScript:
			if m := reTSC.FindStringSubmatch(stderr); m != nil {
				return exception, m[0], atoi(m[2])
			}
		}
		return exception, firstLine(stderr), 0
	}
	switch lang {
	case JavaScript, TypeScript:
		if m := reJSErr.FindStringSubmatch(stderr); m != nil {
			if l := reJSLine.FindStringSubmatch(stderr); l != nil {
				line = atoi(l[1])
			}
			return m[1], m[0], line
		}
	case Java:
		if m := reJava.FindStringSubmatchIndex(stderr); m != nil {
			msg := strings.TrimPrefix(stderr[m[0]:m[1]], `Exception in thread "main" `)
			if l := reJavaLine.FindStringSubmatch(stderr[m[1]:]); l != nil {
				line = atoi(l[2])
			}
			return stderr[m[2]:m[3]], msg, line
		}
		if strings.Contains(stderr, "java.lang.OutOfMemoryError") {
			return "java.lang.OutOfMemoryError", "java.lang.OutOfMemoryError", 0
		}
	case Go:
		if m := reGoPanic.FindString(stderr); m != "" {
			if l := reGoFrame.FindStringSubmatch(stderr); l != nil {
				line = atoi(l[1])
			}
			return "panic", m, line
		}
	case Rust:
		if m := reRustOld.FindStringSubmatch(stderr); m != nil {
			return "panic", m[1], atoi(m[3])
		}
		if m := reRustNew.FindStringSubmatch(stderr); m != nil {
			return "panic", m[3], atoi(m[2])
		}
	case C, CPP:
		if m := reCxxThrow.FindStringSubmatch(stderr); m != nil {
			return m[1], strings.TrimSpace(m[1] + ": " + m[2]), 0
		}
		if m := reCAssert.FindStringSubmatch(stderr); m != nil {
			return "AssertionError", strings.TrimSpace(m[0]), atoi(m[2])
		}
	case Ruby:
		if m := reRuby.FindStringSubmatch(stderr); m != nil {
			return m[3], m[3] + ": " + m[2], atoi(m[1])
		}
		if m := reRubySyn.FindStringSubmatch(stderr); m != nil {
			return "SyntaxError", m[2], atoi(m[1])
		}
	case PHP:
		if m := rePHP.FindStringSubmatch(stderr); m != nil {
			exc := m[1]
			if exc == "" {
				exc = "ParseError"
				if !strings.Contains(m[0], "Parse error") {
					exc = "Error"
				}
			}
			return exc, exc + ": " + m[2], atoi(m[3] + m[4])
		}
	case Lua:
		if m := reLua.FindStringSubmatch(stderr); m != nil {
			// Lua's errors have no types; they are named after the status
			// of its C API: the loader's (LUA_ERRSYNTAX) come without a
			// traceback, nothing ran; the rest are LUA_ERRMEM or LUA_ERRRUN.
			switch {
			case !strings.Contains(stderr, "stack traceback:"):
				return "SyntaxError", m[2], atoi(m[1])
			case strings.HasPrefix(m[2], "not enough memory"):
				return "MemoryError", m[2], atoi(m[1])
			}
			return "RuntimeError", m[2], atoi(m[1])
		}
	}
	return "", "", 0
}

// outOfMemory reads a runtime's own out-of-memory report where the
// runner's hints (the tail of stderr) miss it: Go prints its stacks after it.
func outOfMemory(lang Language, res Result) bool {
	if res.Phase != "" || res.ExitCode == 0 {
		return false
	}
	switch lang {
	case Go:
		return strings.HasPrefix(res.Stderr, "fatal error: runtime: out of memory")
	case Java:
		return strings.HasPrefix(res.Exception, "java.lang.OutOfMemoryError")
	}
	return false
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return ""
}

// ToolchainVersioner is an optional capability of an Executor: the version
// of a language's toolchain in its sandbox (pool-based executors cache it).
type ToolchainVersioner interface {
	ToolchainVersion(ctx context.Context, lang Language) (string, error)
}

// versionArgs are the arguments that make a tool print its version first.
var versionArgs = map[string]string{
	"go":     "version",
	"lua5.4": "-v",
	"java":   "-Xmx64m -XX:+UseSerialGC -version",
	"javac":  "-J-Xmx64m -J-XX:+UseSerialGC --version",
}

// ToolchainVersion says which toolchain runs lang in ex's sandbox: per
// tool, its resolved path, size and modification time and the first line
// of its version ("gcc /usr/bin/x86_64-linux-gnu-gcc-12:1301912:1700000000
// gcc (Debian 12.2.0-14) 12.2.0"). It is part of the exec cache's and the
// compile cache's keys, so neither a result nor a compiled artefact
// survives a compiler upgrade, on the host (bwrap) or in a rebuilt image.
// Python, Bash and SQL give "" (the driver's Info names the interpreter).
// An executor without the ToolchainVersioner capability is asked with a
// bash probe; a missing tool is an error wrapping ErrNoToolchain.
func ToolchainVersion(ctx context.Context, ex Executor, lang Language) (string, error) {
	if len(languages[lang].tools) == 0 {
		return "", nil
	}
	if tv, ok := ex.(ToolchainVersioner); ok {
		return tv.ToolchainVersion(ctx, lang)
	}
	return probeToolchain(ctx, ex, lang)
}

func probeToolchain(ctx context.Context, ex Executor, lang Language) (string, error) {
	var script strings.Builder
	for _, t := range languages[lang].tools {
		args := versionArgs[t]
		if args == "" {
			args = "--version"
		}
		fmt.Fprintf(&script, "p=$(command -v %[1]s) || { echo 'missing %[1]s'; exit 3; }\n"+
			"printf '%%s %%s %%s\\n' %[1]s \"$(stat -Lc '%%n:%%s:%%Y' \"$(readlink -f \"$p\")\")\" \"$(%[1]s %[2]s 2>&1 </dev/null | head -n 1)\"\n", t, args)
	}
	res, err := ex.Run(ctx, Request{Language: Bash, Code: script.String(),
		Limits: Limits{Timeout: 60 * time.Second, CPUTime: 60 * time.Second, MemoryBytes: 2 << 30, Processes: 64}})
	if err != nil {
		return "", fmt.Errorf("executors: %s toolchain version: %w", lang, err)
	}
	out := strings.TrimSpace(res.Stdout)
	if res.ExitCode == 3 {
		return "", fmt.Errorf("executors: %s toolchain version: %w: %s", lang, ErrNoToolchain, out)
	}
	if !res.OK() || res.TimedOut || out == "" {
		return "", fmt.Errorf("executors: %s toolchain version: the probe failed (exit %d): %s", lang, res.ExitCode, firstLine(res.Stderr))
	}
	return out, nil
}

// toolchainVersions caches ToolchainVersion per language for one executor:
// a toolchain does not change under a running process (an upgrade takes a
// new process, or a new image for Docker). Failures are not cached.
type toolchainVersions struct {
	mu sync.Mutex
	m  map[Language]string
}

func (tv *toolchainVersions) get(lang Language, fetch func() (string, error)) (string, error) {
	if len(languages[lang].tools) == 0 {
		return "", nil
	}
	tv.mu.Lock()
	v, ok := tv.m[lang]
	tv.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := fetch()
	if err != nil {
		return "", err
	}
	tv.mu.Lock()
	if tv.m == nil {
		tv.m = map[Language]string{}
	}
	tv.m[lang] = v
	tv.mu.Unlock()
	return v, nil
}

// reScratch is a run's random scratch directory as runtimes print it (node
// and php name the program by its absolute path: /tmp/cf/run-1wly41a1/main.js).
var reScratch = regexp.MustCompile(`/tmp/cf/run-[A-Za-z0-9_]+/`)

// scrubScratch drops the scratch directory from a run's output so the same
// program prints the same text on every run (and in every cache entry and
// dialogue), as Python's relative "main.py" does.
func scrubScratch(res *Result) {
	res.Stdout = reScratch.ReplaceAllLiteralString(res.Stdout, "")
	res.Stderr = reScratch.ReplaceAllLiteralString(res.Stderr, "")
}
