package loaders

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

//go:embed duckdb_check.mjs
var duckdbScript []byte

// DuckDB runs DuckDB (the @duckdb/node-api npm package under modules, which
// ships its own binary) through node on a Parquet file and checks what a
// trainer relies on: messages is LIST<STRUCT<role, content>>, id has type
// idType (VARCHAR or BIGINT), the file has rows rows, and every role is in
// roles (comma-separated; "" allows any). It returns DuckDB's figures.
// ErrNoDuckDB means node or the module is missing.
func DuckDB(ctx context.Context, modules, file string, rows int, idType, roles string) (map[string]any, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("%w: node is not installed", ErrNoDuckDB)
	}
	if _, err := os.Stat(filepath.Join(modules, "@duckdb", "node-api", "package.json")); err != nil {
		return nil, fmt.Errorf("%w: @duckdb/node-api is not installed in %s", ErrNoDuckDB, modules)
	}
	dir, err := os.MkdirTemp("", "duckdb-check-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "check.mjs")
	if err := os.WriteFile(script, duckdbScript, 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, node, script, file, strconv.Itoa(rows), idType, roles)
	cmd.Env = append(os.Environ(), "DUCKDB_NODE_MODULES="+modules)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("duckdb check on %s: %v\n%s%s", file, err, out, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("duckdb check output %q: %w", out, err)
	}
	return res, nil
}

// ErrNoDuckDB means the DuckDB check cannot run on this machine.
var ErrNoDuckDB = errors.New("loaders: DuckDB unavailable")
