package schema

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema/loaders"
)

// duckdbModules finds a node_modules holding @duckdb/node-api: the
// DUCKDB_NODE_MODULES variable, or .ci/node_modules (installed by .ci/setup).
func duckdbModules(t *testing.T) string {
	if d := os.Getenv("DUCKDB_NODE_MODULES"); d != "" {
		return d
	}
	root, err := sharedtest.Root()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, ".ci", "node_modules")
}

// duckdbCheck returns a function that has DuckDB read a Parquet file and
// check its id type, messages type, row count and roles (loaders.DuckDB).
// It skips only outside CI when node or the module is missing; under
// CI=true a missing module fails.
func duckdbCheck(t *testing.T) func(file string, rows int, idType, roles string) map[string]any {
	ci := os.Getenv("CI") == "true" || os.Getenv("CI") == "1"
	mods := duckdbModules(t)
	return func(file string, rows int, idType, roles string) map[string]any {
		t.Helper()
		res, err := loaders.DuckDB(context.Background(), mods, file, rows, idType, roles)
		if errors.Is(err, loaders.ErrNoDuckDB) && !ci {
			t.Skipf("skipping: %v (cd .ci && npm install --no-save @duckdb/node-api)", err)
		}
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
}

// TestDuckDBReadsParquet: DuckDB reads each Parquet layout with the
// expected column types: the default Code-Feedback layout (user/assistant
// roles only; id VARCHAR for generated dialogues, BIGINT for the real
// Code-Feedback sample's integer ids) and the native layout.
func TestDuckDBReadsParquet(t *testing.T) {
	check := duckdbCheck(t)
	dir := t.TempDir()
	var ds []Dialogue
	for i := 0; i < 1500; i++ {
		ds = append(ds, sampleDialogue(i))
	}
	ctx := context.Background()
	src := filepath.Join(dir, "d.jsonl")
	if err := WriteAll(src, ds); err != nil {
		t.Fatal(err)
	}
	cf := filepath.Join(dir, "cf.parquet")
	if _, err := Export(ctx, src, cf, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	res := check(cf, len(ds), "VARCHAR", "user,assistant")
	// The system turn is folded into the first user turn: 6 turns each.
	if got, want := res["turns"], float64(6*len(ds)); got != want {
		t.Errorf("duckdb counted %v turns, want %v", got, want)
	}
	native := filepath.Join(dir, "native.parquet")
	if err := WriteAll(native, ds, RowGroupBytes(128<<10)); err != nil {
		t.Fatal(err)
	}
	res = check(native, len(ds), "VARCHAR", "system,user,assistant,execution")
	if res["first_role"] != "system" {
		t.Errorf("duckdb first role %v, want system", res["first_role"])
	}
	if d := sharedtest.DataDir(); d != "" {
		src := filepath.Join(d, "codefeedback-sample", "code_feedback_sample.jsonl")
		out := filepath.Join(dir, "hub.parquet")
		if _, err := Export(ctx, src, out, ExportOptions{To: ExportParquet, Compression: "zstd"}); err != nil {
			t.Fatal(err)
		}
		check(out, 10, "BIGINT", "user,assistant")
	}
}
