package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// writeDialogues writes n distinct 6-turn dialogues (about 2 KB each) in
// the Code-Feedback layout, the file both codefeedback and DuckDB convert.
func writeDialogues(path string, n int) error {
	words := strings.Fields(`the function returns a list of values sorted by key so that each call
		compares two items and the loop stops when the index reaches the end of the input here is
		an implementation that handles empty lists negative numbers and duplicates correctly`)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	x := uint32(88172645)
	var b strings.Builder
	text := func(size int) string {
		b.Reset()
		for b.Len() < size {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			b.WriteString(words[x%uint32(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	type msg struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	for i := 0; i < n; i++ {
		d := struct {
			ID       string `json:"id"`
			Messages []msg  `json:"messages"`
		}{ID: fmt.Sprintf("d%d", i)}
		d.Messages = []msg{
			{"user", text(200) + fmt.Sprint(i)},
			{"assistant", text(250) + "\n```python\ndef f(xs):\n    return sorted(xs)\nprint(f([3, 1, " + fmt.Sprint(i) + "]))\n```\n"},
			{"user", "Execution result: \n[1, 3, " + fmt.Sprint(i) + "]"},
			{"assistant", text(400)},
			{"user", text(150)},
			{"assistant", text(600) + "\n```python\nprint(" + fmt.Sprint(i) + ")\n```"},
		}
		if err := enc.Encode(d); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// duckdb runs the schema benchmark's DuckDB script (node + @duckdb/node-api)
// and returns the cost of its query: wall as DuckDB timed it inside node,
// CPU as node's less that of starting node and loading DuckDB.
type duckdb struct {
	node, script, mods string
	startCPU           float64
}

func findDuckDB(ctx context.Context, e *env) (*duckdb, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node not found: %w", err)
	}
	var cands []string
	if d := os.Getenv("DUCKDB_NODE_MODULES"); d != "" {
		cands = append(cands, d)
	}
	cands = append(cands, filepath.Join(e.root, ".ci", "node_modules"))
	if out, err := exec.CommandContext(ctx, "git", "-C", e.root, "rev-parse", "--path-format=absolute", "--git-common-dir").Output(); err == nil {
		cands = append(cands, filepath.Join(filepath.Dir(strings.TrimSpace(string(out))), ".ci", "node_modules"))
	}
	for _, m := range cands {
		if _, err := os.Stat(filepath.Join(m, "@duckdb", "node-api", "package.json")); err == nil {
			d := &duckdb{node: node, script: filepath.Join(e.root, "schema", "testdata", "duckdb_bench.mjs"), mods: m}
			var starts []float64
			for range 3 {
				c, _, err := d.run(ctx, "start")
				if err != nil {
					return nil, err
				}
				starts = append(starts, c.cpu)
			}
			slices.Sort(starts)
			d.startCPU = starts[1]
			return d, nil
		}
	}
	return nil, fmt.Errorf("no node_modules with @duckdb/node-api in %v (cd .ci && npm install --no-save @duckdb/node-api)", cands)
}

func (d *duckdb) run(ctx context.Context, args ...string) (cost, map[string]float64, error) {
	env := append(os.Environ(), "DUCKDB_NODE_MODULES="+d.mods)
	c, out, err := command(ctx, "", env, append([]string{d.node, d.script}, args...)...)
	if err != nil {
		return c, nil, fmt.Errorf("duckdb %s: %w", args[0], err)
	}
	res := map[string]float64{}
	if err := json.Unmarshal(out, &res); err != nil {
		return c, nil, fmt.Errorf("duckdb %s printed %q: %w", args[0], out, err)
	}
	return cost{wall: res["seconds"], cpu: max(0, c.cpu-d.startCPU)}, res, nil
}

// benchParquet: `export` JSONL -> Parquet (zstd) and `inspect` of that file
// against DuckDB's COPY and a DuckDB scan of every message (a count of
// dialogues, turns and characters: less than inspect computes, so the
// inspect row is a bound from below on what reading the file costs).
func benchParquet(ctx context.Context, e *env) ([]row, error) {
	d, err := findDuckDB(ctx, e)
	if err != nil {
		e.log("parquet: skipped: %v", err)
		return nil, nil
	}
	n := e.n(25_000)
	in := filepath.Join(e.dir, "dialogues.jsonl")
	if err := writeDialogues(in, n); err != nil {
		return nil, err
	}
	ours, theirs := filepath.Join(e.dir, "ours.parquet"), filepath.Join(e.dir, "duckdb.parquet")
	// DuckDB's figures leave out node's start and DuckDB's load; ours
	// leave out the binary's start (the median of three `--version`
	// runs) in the same way, so both sides count the work on the file.
	var starts []cost
	for range 3 {
		c, _, err := command(ctx, e.dir, nil, e.bin, "--version")
		if err != nil {
			return nil, err
		}
		starts = append(starts, c)
	}
	slices.SortFunc(starts, func(a, b cost) int { return cmp.Compare(a.cpu, b.cpu) })
	start := starts[1]
	ourCmd := func(args ...string) (cost, error) {
		c, _, err := command(ctx, e.dir, nil, append([]string{e.bin}, args...)...)
		return cost{wall: max(0, c.wall-start.wall), cpu: max(0, c.cpu-start.cpu)}, err
	}
	var w, dw, r, dr cost
	// Writes twice; reads, which take tenths of a second and so vary
	// more with the load, six times; each side right after the other.
	const writes, reads = 2, 6
	for i := range reads {
		if i < writes {
			c, err := ourCmd("export", "--compression", "zstd", in, ours)
			if err != nil {
				return nil, err
			}
			w = w.add(c)
			c, _, err = d.run(ctx, "write", in, theirs)
			if err != nil {
				return nil, err
			}
			dw = dw.add(c)
		}
		c, err := ourCmd("inspect", "--sample", "0", ours)
		if err != nil {
			return nil, err
		}
		r = r.add(c)
		c, res, err := d.run(ctx, "read", ours)
		if err != nil {
			return nil, err
		}
		if int(res["n"]) != n {
			return nil, fmt.Errorf("duckdb read %v rows, want %d", res["n"], n)
		}
		dr = dr.add(c)
	}
	size := fmt.Sprintf("%d dialogues, %.0f MB JSONL, %d runs each; starts subtracted: DuckDB's start and load, our binary's %.3f CPU-s", n, float64(fileSize(in))/1e6, writes, start.cpu)
	return []row{
		pair("export JSONL->Parquet", "codefeedback export", "DuckDB COPY", w, dw, 1, size),
		// Not the same work: the floor of reading those columns. The
		// same figures in DuckDB SQL (percentiles, distinct turns,
		// openings, fence languages) take it seconds, not tenths.
		pair("inspect Parquet", "codefeedback inspect", "DuckDB scan", r, dr, 1,
			fmt.Sprintf("%d runs each; DuckDB sums dialogues, turns and characters; inspect also prints percentiles, roles, languages, distinct turns, openings", reads)),
	}, nil
}
