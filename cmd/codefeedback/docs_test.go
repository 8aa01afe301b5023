package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"

	_ "github.com/codefeedback/codefeedback/docs/example/upper" // the stage docs/write-a-stage.md names
	"github.com/codefeedback/codefeedback/pipeline"
)

// docFiles are the README and the docs whose samples the tests check (Go
// samples: docs/example/upper compiles and runs the one stage they show).
func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append(files, "../../README.md", "../../pipeline/README.md")
}

type block struct {
	file, lang, text string
	line             int
}

var fence = regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```")

func docBlocks(t *testing.T) []block {
	t.Helper()
	var bs []block
	for _, f := range docFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllSubmatchIndex(b, -1) {
			bs = append(bs, block{file: f, lang: string(b[m[2]:m[3]]), text: string(b[m[4]:m[5]]),
				line: strings.Count(string(b[:m[0]]), "\n") + 1})
		}
	}
	return bs
}

// TestDocPipelines loads every YAML sample of the README and docs as the
// pipeline file it is or belongs to: a whole file as it is, a list of
// stages under `stages:`, a top-level section beside a minimal pipeline.
// Stage names, settings, wiring, executors and the model section are
// checked as `codefeedback validate` checks them; inputs are empty files.
func TestDocPipelines(t *testing.T) {
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang != "yaml" {
			continue
		}
		n++
		var doc any
		if err := yaml.Unmarshal([]byte(b.text), &doc); err != nil {
			t.Errorf("%s:%d: YAML: %v", b.file, b.line, err)
			continue
		}
		text := b.text
		switch d := doc.(type) {
		case []any: // stage entries
			text = "inputs: [{path: q.jsonl, format: native}]\nstages:\n" + indent(text)
		case map[string]any:
			if _, ok := d["stages"]; !ok {
				text += "stages: [{stage: dedup}]\n"
			}
			if _, ok := d["inputs"]; !ok {
				text += "inputs: [{path: q.jsonl, format: native}]\n"
			}
		}
		dir := t.TempDir()
		file := filepath.Join(dir, "p.yaml")
		os.WriteFile(file, []byte(text), 0o644)
		var parsed struct {
			Inputs []struct{ Path string } `yaml:"inputs"`
		}
		yaml.Unmarshal([]byte(text), &parsed)
		for _, in := range parsed.Inputs {
			if !strings.Contains(in.Path, "://") {
				os.MkdirAll(filepath.Dir(filepath.Join(dir, in.Path)), 0o755)
				os.WriteFile(filepath.Join(dir, in.Path), nil, 0o644)
			}
		}
		if _, err := pipeline.Load(file, filepath.Join(dir, "run")); err != nil {
			t.Errorf("%s:%d: the sample does not load as a pipeline file:\n%s\n%v", b.file, b.line, text, err)
		}
	}
	if n < 5 {
		t.Errorf("found %d YAML samples, want the README's and the docs' (7 when written)", n)
	}
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

// TestDocCommands checks every command line of the README and docs (shell
// samples and synopses): the command exists and has every flag named.
func TestDocCommands(t *testing.T) {
	cmds := allCommands(newApp().Commands, "")
	call := regexp.MustCompile(`(?:^|[\s|;&(])(?:bin/)?codefeedback((?: [a-z][a-z-]*)+)(.*)`)
	flag := regexp.MustCompile(`(?:^|[\s\[|])--([a-z][a-z0-9-]*)`)
	n := 0
	for _, b := range docBlocks(t) {
		if b.lang == "go" || b.lang == "yaml" {
			continue
		}
		for i, line := range strings.Split(b.text, "\n") {
			line, _, _ = strings.Cut(line, " #")
			for _, part := range regexp.MustCompile(`&&|;|\|`).Split(line, -1) {
				m := call.FindStringSubmatch(part)
				if m == nil {
					continue
				}
				words := strings.Fields(m[1])
				var c *cli.Command
				path := ""
				for _, w := range words {
					p := strings.TrimSpace(path + " " + w)
					if cmds[p] == nil {
						break
					}
					path, c = p, cmds[p]
				}
				if c == nil {
					t.Errorf("%s:%d: %q: no such command", b.file, b.line+i+1, strings.TrimSpace(part))
					continue
				}
				n++
				var names []string
				for _, f := range c.Flags {
					names = append(names, f.Names()...)
				}
				rest := strings.TrimPrefix(part[strings.Index(part, "codefeedback"):], "codefeedback "+path)
				for _, fm := range flag.FindAllStringSubmatch(rest, -1) {
					if fm[1] != "help" && !slices.Contains(names, fm[1]) {
						t.Errorf("%s:%d: codefeedback %s has no flag --%s", b.file, b.line+i+1, path, fm[1])
					}
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("checked %d command lines, want every one of the docs' (over 40 when written)", n)
	}
}
