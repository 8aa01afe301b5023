package pipeline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "github.com/codefeedback/codefeedback/executors/bwrap"
	_ "github.com/codefeedback/codefeedback/executors/docker"
)

// TestConfigExecutorURL: validate checks the executor URL with the drivers'
// own parser (image tags are not ports; every option is checked) and points
// at the line of the `executor:` value.
func TestConfigExecutorURL(t *testing.T) {
	cases := []struct {
		url  string
		want string // "" = valid
	}{
		{"docker://python:3.12-slim?pool=4", ""},
		{"docker://codefeedback-sandbox:bookworm", ""},
		{"bwrap://?memory=1GiB&disk=64MiB", ""},
		{"bwrap://?memory=lots&pool=0&bogus=1", `p.yaml:3:11: executor: bwrap: unknown option "bogus" in bwrap URL (known: `},
		{"bwrap://?memory=lots&pool=0&bogus=2", `; option memory="lots": not a size (want e.g. 512MiB): "lots"; option pool="0": want a positive integer, got "0"`},
		{"docker://img:1?cpus=many", `p.yaml:3:11: executor: docker: URL parameter cpus="many"`},
		{"dockr://img:1", `p.yaml:3:11: executor: unknown driver "dockr"`},
		{"dockr://img:2", `(did you mean "docker"?)`},
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			dir := t.TempDir()
			writeQueries(t, filepath.Join(dir, "q.jsonl"), 0, 1)
			file := filepath.Join(dir, "p.yaml")
			y := "\ninputs: [{path: q.jsonl, format: native}]\nexecutor: " + c.url + "\nstages: [{stage: t-suffix}]\n"
			if err := os.WriteFile(file, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file, "")
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v\nwant an error containing %q", err, c.want)
			}
		})
	}
}
