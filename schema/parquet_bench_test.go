package schema

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

//go:embed testdata/duckdb_bench.mjs
var duckdbBenchScript []byte

// writeCodeFeedbackJSONL writes n distinct 6-turn dialogues in the
// Code-Feedback layout ({id, messages: [{role, content}]}), the file both
// codefeedback and DuckDB convert.
func writeCodeFeedbackJSONL(tb testing.TB, path string, n int) int64 {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	for i := 0; i < n; i++ {
		d := benchDialogue(i)
		if err := enc.Encode(ToCodeFeedback(&d)); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	st, _ := os.Stat(path)
	return st.Size()
}

// duckdbTimer runs testdata/duckdb_bench.mjs and returns the seconds DuckDB
// took inside node (its start and module load excluded, to DuckDB's favour).
func duckdbTimer(tb testing.TB) func(args ...string) (float64, map[string]float64) {
	tb.Helper()
	node, err := exec.LookPath("node")
	mods := duckdbModulesTB(tb)
	if err == nil {
		_, err = os.Stat(filepath.Join(mods, "@duckdb", "node-api", "package.json"))
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("DuckDB unavailable: %v", err)
		}
		tb.Skipf("skipping: DuckDB unavailable (%v); cd .ci && npm install --no-save @duckdb/node-api", err)
	}
	script := filepath.Join(tb.TempDir(), "duckdb_bench.mjs")
	if err := os.WriteFile(script, duckdbBenchScript, 0o644); err != nil {
		tb.Fatal(err)
	}
	return func(args ...string) (float64, map[string]float64) {
		tb.Helper()
		cmd := exec.Command(node, append([]string{script}, args...)...)
		cmd.Env = append(os.Environ(), "DUCKDB_NODE_MODULES="+mods)
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				tb.Fatalf("duckdb %v: %v\n%s", args, err, ee.Stderr)
			}
			tb.Fatalf("duckdb %v: %v", args, err)
		}
		res := map[string]float64{}
		if err := json.Unmarshal(out, &res); err != nil {
			tb.Fatalf("duckdb output %q: %v", out, err)
		}
		return res["seconds"], res
	}
}

func duckdbModulesTB(tb testing.TB) string {
	if d := os.Getenv("DUCKDB_NODE_MODULES"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	return filepath.Join(filepath.Dir(wd), ".ci", "node_modules")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkParquetVsDuckDB: JSONL -> Parquet (zstd) with `export` and
// reading that Parquet with `inspect`, against DuckDB's COPY and a DuckDB
// scan of every message of the same files, timed in the same benchmark:
// medians of 3 alternating pairs (CODEFEEDBACK_BENCH_PARQUET_N dialogues,
// default 100,000). x-duckdb-* below 1 means faster than DuckDB.
func BenchmarkParquetVsDuckDB(b *testing.B) {
	n := 100_000
	if v, err := strconv.Atoi(os.Getenv("CODEFEEDBACK_BENCH_PARQUET_N")); err == nil && v > 0 {
		n = v
	}
	duck := duckdbTimer(b)
	dir := b.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	inBytes := writeCodeFeedbackJSONL(b, in, n)
	ours, theirs := filepath.Join(dir, "ours.parquet"), filepath.Join(dir, "duckdb.parquet")
	ctx := context.Background()
	var w, dw, r, dr []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for pair := 0; pair < 3; pair++ {
			start := time.Now()
			st, err := Export(ctx, in, ours, ExportOptions{To: ExportCodeFeedback, Compression: "zstd"})
			if err != nil {
				b.Fatal(err)
			}
			w = append(w, time.Since(start).Seconds())
			if st.Written != n {
				b.Fatalf("export wrote %d, want %d", st.Written, n)
			}
			s, _ := duck("write", in, theirs)
			dw = append(dw, s)
			start = time.Now()
			rep, err := Inspect(ours, 0)
			if err != nil {
				b.Fatal(err)
			}
			r = append(r, time.Since(start).Seconds())
			if rep.Records != n {
				b.Fatalf("inspect read %d records, want %d", rep.Records, n)
			}
			s, res := duck("read", ours)
			dr = append(dr, s)
			if int(res["n"]) != n {
				b.Fatalf("duckdb read %v rows, want %d", res["n"], n)
			}
		}
	}
	b.StopTimer()
	ob, _ := os.Stat(ours)
	db, _ := os.Stat(theirs)
	b.ReportMetric(float64(inBytes)/1e6, "input-MB")
	b.ReportMetric(median(w), "s/write")
	b.ReportMetric(median(dw), "s/duckdb-write")
	b.ReportMetric(median(w)/median(dw), "x-duckdb-write")
	b.ReportMetric(median(r), "s/read")
	b.ReportMetric(median(dr), "s/duckdb-read")
	b.ReportMetric(median(r)/median(dr), "x-duckdb-read")
	b.ReportMetric(float64(ob.Size())/1e6, "parquet-MB")
	b.ReportMetric(float64(db.Size())/1e6, "duckdb-parquet-MB")
}
