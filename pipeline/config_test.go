package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string // each must appear, in order, as "p.yaml:LINE:...msg"
	}{
		{"unknown stage with suggestion", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - stage: t-sufix
`, []string{`p.yaml:4:12: unknown stage "t-sufix" (did you mean "t-suffix"?)`}},
		{"typo in a top-level key", `
inputs: [{path: q.jsonl, format: native}]
stagse:
  - stage: t-suffix
`, []string{`p.yaml:2:1: no stages`, `p.yaml:3:1: unknown key "stagse" (did you mean "stages"?)`}},
		{"typo in stage settings", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - stage: t-suffix
    settings:
      promt: hi
`, []string{`p.yaml:6:7: unknown key "promt" (did you mean "prompt"?)`}},
		{"bad type", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - stage: t-suffix
    concurrency: many
    settings: {sleep: forever}
`, []string{`p.yaml:5:18: cannot unmarshal !!str ` + "`many`", `p.yaml:6:23: cannot unmarshal !!str ` + "`forever`"}},
		{"missing input and unknown format", `
inputs:
  - path: nope.jsonl
    format: natve
stages: [{stage: t-suffix}]
`, []string{`p.yaml:3:11: input file`, `nope.jsonl: no such file or directory`, `p.yaml:4:13: unknown input format "natve" (did you mean "native"?)`}},
		{"cycle", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-suffix, name: a, input: c}
  - {stage: t-suffix, name: b, input: a}
  - {stage: t-suffix, name: c, input: b}
`, []string{`p.yaml:4:5: stages form a cycle: a -> c -> b -> a`}},
		{"unknown input stage and output", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-suffix, name: a}
  - {stage: t-suffix, name: b, input: [ab]}
outputs:
  - {path: out.jsonl, from: bb, format: parket}
`, []string{`p.yaml:5:39: stage b reads from unknown stage "ab" (did you mean "a"?)`, `p.yaml:7:29: output from unknown stage "bb" (did you mean "b"?)`, `p.yaml:7:41: unknown output format "parket"`}},
		{"duplicate names and validator", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-suffix}
  - {stage: t-suffix, settings: {sleep: -1s}}
`, []string{`p.yaml:5:5: two stages named "t-suffix" (the other at line 4)`}},
		{"validator", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-suffix, settings: {sleep: -1s}}
`, []string{`p.yaml:4:33: stage t-suffix: sleep must not be negative`}},
		{"executor driver", `
inputs: [{path: q.jsonl, format: native}]
executor: bwarp://?memory=1GiB
stages: [{stage: t-suffix}]
`, []string{`p.yaml:3:11: executor: unknown driver "bwarp"`}},
		{"model section without support", `
inputs: [{path: q.jsonl, format: native}]
model: {name: gpt}
stages: [{stage: t-suffix}]
`, []string{`p.yaml:3:8: no model support is built into this program`}},
		{"duplicate key", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - stage: t-suffix
    retries: 1
    retries: 2
`, []string{`p.yaml:6:5: key "retries" given twice`}},
		// YAML syntax errors name the 1-based line: yaml.v3 prints a parser
		// error's line 0-based (the unclosed mapping opens on line 4), a
		// scanner error's 1-based (the tab is on line 4).
		{"unclosed flow mapping", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - {stage: t-suffix
  - {stage: t-suffix}
`, []string{`p.yaml:4: YAML syntax: did not find expected ',' or '}' (in what starts on this line)`}},
		{"block sequence indented wrong", `
inputs: [{path: q.jsonl, format: native}]
stages:
  - stage: t-suffix
   retries: 1
`, []string{`p.yaml:4: YAML syntax: did not find expected '-' indicator (in what starts on this line)`}},
		{"tab in indentation", "\ninputs: [{path: q.jsonl, format: native}]\nstages:\n\t- stage: t-suffix\n",
			[]string{`p.yaml:4: YAML syntax: found character that cannot start any token`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 1)
			file := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file, "")
			if err == nil {
				t.Fatalf("got no error, want %q", c.want)
			}
			msg := strings.ReplaceAll(err.Error(), dir+"/", "")
			rest := msg
			for _, w := range c.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("got errors:\n%s\nwant (in order) %q", msg, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestConfigValid(t *testing.T) {
	dir := t.TempDir()
	writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 1)
	file := filepath.Join(dir, "p.yaml")
	os.WriteFile(file, []byte(`
inputs: [{path: q.jsonl, format: native}]
defaults: {concurrency: 4}
stages:
  - {stage: t-suffix, name: b, input: a, retries: 5}
  - {stage: t-suffix, name: a, input: inputs, settings: {prompt: x, sleep: 2s, fail_ids: q1}}
`), 0o644)
	c, err := Load(file, "elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(c.Stages); strings.Join(got, ",") != "a,b" {
		t.Fatalf("order got %v want [a b]", got)
	}
	a, b := c.Stages[0], c.Stages[1]
	if a.Concurrency != 4 || b.Retries != 5 || a.Retries != DefaultStageOptions.Retries {
		t.Fatalf("options got a=%+v b=%+v", a.StageOptions, b.StageOptions)
	}
	if string(a.Settings) != `{"prompt":"x","sleep":2000000000,"fail_ids":["q1"],"transient":false,"fail_times":0,"cost":0,"parallel":0,"nested":{"keep":0,"skip":0}}` {
		t.Fatalf("settings got %s", a.Settings)
	}
	if c.RunDir != "elsewhere" || a.Input[0] != InputsName {
		t.Fatalf("run dir %q, a input %v", c.RunDir, a.Input)
	}
}
