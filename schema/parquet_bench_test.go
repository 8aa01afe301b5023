package schema

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/internal/benchtest"
)

//go:embed testdata/duckdb_bench.mjs
var duckdbBenchScript []byte

var benchWords = strings.Fields(`the a list of values sum function returns index error test input output
	sorted array string count each item key map number first last empty case loop check result
	because when while then should would could also into from with without over under fix bug
	guard length element range pair node tree graph path cost total weight parse line file read`)

// variedDialogue is a 6-turn dialogue of about 2 KB whose prose and code vary
// from one dialogue to the next, so compression sees text rather than one
// repeated record (real corpora compress 3-5x, not 30x).
func variedDialogue(i int) Dialogue {
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	next := func() uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x }
	prose := func(words int) string {
		var b strings.Builder
		for w := 0; w < words; w++ {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(benchWords[next()%uint64(len(benchWords))])
		}
		return b.String() + "."
	}
	var code strings.Builder
	fmt.Fprintf(&code, "def %s_%d(values):\n    total = 0\n", benchWords[next()%uint64(len(benchWords))], next()%1000)
	for l := 0; l < 6; l++ {
		fmt.Fprintf(&code, "    total += values[%d] * %d  # %s\n", next()%97, next()%1000, prose(4))
	}
	code.WriteString("    return total\n")
	msgs := []Message{
		{Role: RoleSystem, Content: "You are a careful Python programmer."},
		{Role: RoleUser, Content: fmt.Sprintf("Task %d: %s", i, prose(40))},
		{Role: RoleAssistant, Content: prose(25) + "\n```python\n" + code.String() + "```"},
		{Role: RoleExecution, Content: fmt.Sprintf("Traceback (most recent call last):\n  File \"main.py\", line %d\nIndexError: list index out of range (%d)\n", next()%40, next()%100000)},
		{Role: RoleAssistant, Content: prose(30) + "\n```python\ndef weighted(values):\n    return sum(v for v in values)\n```"},
		{Role: RoleUser, Content: prose(12)},
	}
	return Dialogue{ID: "bench-" + strconv.Itoa(i), Messages: msgs, Stage: "simulate", Method: "execution-feedback"}
}

// writeCodeFeedbackJSONL writes n distinct 6-turn dialogues in the
// Code-Feedback layout ({id, messages: [{role, content}]}), the file both
// codefeedback and DuckDB convert.
func writeCodeFeedbackJSONL(tb testing.TB, path string, n int) int64 {
	tb.Helper()
	return benchtest.WriteFile(tb, path, func(w io.Writer) {
		enc := json.NewEncoder(w)
		for i := 0; i < n; i++ {
			d := variedDialogue(i)
			if err := enc.Encode(ToCodeFeedback(&d)); err != nil {
				tb.Fatal(err)
			}
		}
	})
}

// duckdbTimer runs testdata/duckdb_bench.mjs and returns the seconds DuckDB
// took inside node (its start and module load excluded, to DuckDB's favour).
func duckdbTimer(tb testing.TB) func(args ...string) (float64, map[string]float64) {
	// res["cpu"] is the node process's CPU seconds (start and load included).
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
		res["cpu"] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
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
// default 100,000). x-duckdb-* below 1 means faster than DuckDB. DuckDB's
// wall time is its query's alone; its CPU is its process's less the median
// CPU of starting node and loading DuckDB without a query.
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
	var starts []float64
	for range 3 {
		_, res := duck("start")
		starts = append(starts, res["cpu"])
	}
	startCPU := median(starts)
	var w, dw, r, dr []float64
	var wc, dwc, rc, drc []float64 // CPU seconds: less sensitive to a loaded machine
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for pair := 0; pair < 3; pair++ {
			start, cpu0 := time.Now(), benchtest.CPUSeconds(b)
			st, err := Export(ctx, in, ours, ExportOptions{To: ExportCodeFeedback, Compression: "zstd"})
			if err != nil {
				b.Fatal(err)
			}
			w, wc = append(w, time.Since(start).Seconds()), append(wc, benchtest.CPUSeconds(b)-cpu0)
			if st.Written != n {
				b.Fatalf("export wrote %d, want %d", st.Written, n)
			}
			s, res := duck("write", in, theirs)
			dw, dwc = append(dw, s), append(dwc, res["cpu"]-startCPU)
			start, cpu0 = time.Now(), benchtest.CPUSeconds(b)
			rep, err := Inspect(ctx, ours, 0)
			if err != nil {
				b.Fatal(err)
			}
			r, rc = append(r, time.Since(start).Seconds()), append(rc, benchtest.CPUSeconds(b)-cpu0)
			if rep.Records != n {
				b.Fatalf("inspect read %d records, want %d", rep.Records, n)
			}
			s, res = duck("read", ours)
			dr, drc = append(dr, s), append(drc, res["cpu"]-startCPU)
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
	b.ReportMetric(median(wc)/median(dwc), "x-duckdb-write-cpu")
	b.ReportMetric(median(rc)/median(drc), "x-duckdb-read-cpu")
	b.ReportMetric(median(rc), "cpu-s/read")
	b.ReportMetric(median(drc), "cpu-s/duckdb-read")
	b.ReportMetric(startCPU, "cpu-s/duckdb-start")
	b.ReportMetric(float64(ob.Size())/1e6, "parquet-MB")
	b.ReportMetric(float64(db.Size())/1e6, "duckdb-parquet-MB")
}
