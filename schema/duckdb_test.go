package schema

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/codefeedback/codefeedback/internal/shared"
)

// duckdbModules finds a node_modules holding @duckdb/node-api: the
// DUCKDB_NODE_MODULES variable, or .ci/node_modules (installed by .ci/setup).
func duckdbModules(t *testing.T) string {
	if d := os.Getenv("DUCKDB_NODE_MODULES"); d != "" {
		return d
	}
	root, err := shared.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, ".ci", "node_modules")
}

// TestDuckDBReadsParquet exports dialogues to Parquet and has DuckDB (the npm
// package, which ships its own binary) check the schema and row count. It
// skips only outside CI when node or the module is missing; under CI=true a
// missing module fails.
func TestDuckDBReadsParquet(t *testing.T) {
	ci := os.Getenv("CI") == "true" || os.Getenv("CI") == "1"
	node, err := exec.LookPath("node")
	if err != nil {
		if ci {
			t.Fatal("CI is set but node is not installed: the DuckDB Parquet check cannot run")
		}
		t.Skip("skipping: node is not installed (needed for the DuckDB Parquet check)")
	}
	mods := duckdbModules(t)
	if _, err := os.Stat(filepath.Join(mods, "@duckdb", "node-api", "package.json")); err != nil {
		if ci {
			t.Fatalf("CI is set but @duckdb/node-api is not installed in %s (run .ci/setup)", mods)
		}
		t.Skipf("skipping: @duckdb/node-api not installed in %s (cd .ci && npm install --no-save @duckdb/node-api)", mods)
	}
	dir := t.TempDir()
	pq := filepath.Join(dir, "d.parquet")
	var ds []Dialogue
	for i := 0; i < 1500; i++ {
		ds = append(ds, sampleDialogue(i))
	}
	if err := WriteAll(pq, ds, RowGroupBytes(128<<10)); err != nil {
		t.Fatal(err)
	}
	check := func(file string, rows int) map[string]any {
		cmd := exec.CommandContext(context.Background(), node, filepath.Join("testdata", "duckdb_check.mjs"), file, strconv.Itoa(rows))
		cmd.Env = append(os.Environ(), "DUCKDB_NODE_MODULES="+mods)
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("duckdb check on %s: %v\n%s%s", file, err, out, stderr)
		}
		var res map[string]any
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("duckdb check output %q: %v", out, err)
		}
		return res
	}
	res := check(pq, len(ds))
	if got, want := res["turns"], float64(6*len(ds)); got != want {
		t.Errorf("duckdb counted %v turns, want %v", got, want)
	}
	if res["first_role"] != "system" {
		t.Errorf("duckdb first role %v, want system", res["first_role"])
	}
	// The real Code-Feedback sample, exported through the public API.
	if d := shared.DataDir(); d != "" {
		src := filepath.Join(d, "codefeedback-sample", "code_feedback_sample.jsonl")
		out := filepath.Join(dir, "cf.parquet")
		if _, err := Export(context.Background(), src, out, ExportOptions{To: ExportParquet, Compression: "zstd"}); err != nil {
			t.Fatal(err)
		}
		check(out, 10)
	}
}
