package main

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// writeQueries writes n Code Alpaca-sized queries (about 400 bytes each,
// instruction, input and output, words drawn so that every record differs
// and compression sees text rather than one repeated line).
func writeQueries(path string, n int) (int64, error) {
	words := strings.Fields(`write a function that returns the sum of two lists sorted by key
		implement binary search over an array of integers and explain the complexity parse the
		csv file count words in a string reverse linked list find duplicates validate email
		address merge intervals compute the longest common prefix convert roman numerals
		def return for while if else import class self print range len dict set tuple yield`)
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	x := uint32(2463534242)
	next := func() string {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return words[x%uint32(len(words))]
	}
	var b strings.Builder
	text := func(size int) string {
		b.Reset()
		for b.Len() < size {
			b.WriteString(next())
			b.WriteByte(' ')
		}
		return strings.TrimSpace(b.String())
	}
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, `{"id":"q%d","instruction":"%s (task %d)","input":"%s","output":"%s"}`+"\n",
			i, text(120), i, text(40), text(200))
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// rerunPipeline: the inputs and two per-item stages that pass every query
// through without a model (filter rates nothing, explain has no dialogue to
// preface), and one published output.
const rerunPipeline = `run_dir: run
inputs: [{path: q.jsonl, format: alpaca}]
stages:
  - {stage: filter, input: [inputs]}
  - {stage: explain, input: [filter]}
outputs:
  - {path: out/queries.jsonl, format: jsonl, from: explain}
`

// benchRerun: an unchanged re-run of a large input, against reading and
// hashing the input once (sha256sum, and Python's hashlib), and the run
// directory's store against the input's size.
func benchRerun(ctx context.Context, e *env) ([]row, error) {
	n := e.n(100_000)
	dir := filepath.Join(e.dir, "rerun")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	in := filepath.Join(dir, "q.jsonl")
	inBytes, err := writeQueries(in, n)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(rerunPipeline), 0o644); err != nil {
		return nil, err
	}
	first, _, err := command(ctx, dir, nil, e.bin, "run", "p.yaml")
	if err != nil {
		return nil, fmt.Errorf("first run: %w", err)
	}
	e.log("rerun: first run of %d items: %.1f s, %.1f CPU-s", n, first.wall, first.cpu)
	const pairs = 3
	var ours, sum, py cost
	hashPy := `import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    while b := f.read(1 << 20):
        h.update(b)
print(h.hexdigest())`
	for range pairs {
		c, _, err := command(ctx, dir, nil, e.bin, "run", "p.yaml")
		if err != nil {
			return nil, fmt.Errorf("re-run: %w", err)
		}
		ours = ours.add(c)
		c, _, err = command(ctx, dir, nil, "sha256sum", in)
		if err != nil {
			return nil, err
		}
		sum = sum.add(c)
		c, _, err = command(ctx, dir, nil, "/usr/bin/python3", "-c", hashPy, in)
		if err != nil {
			return nil, err
		}
		py = py.add(c)
	}
	store := fileSize(filepath.Join(dir, "run", "store.db"))
	runDir := treeSize(filepath.Join(dir, "run"))
	note := fmt.Sprintf("%d items, %.0f MB; store.db %.2fx the input (target <= 1.2x), run dir %.2fx; first run %.1f CPU-s",
		n, float64(inBytes)/1e6, float64(store)/float64(inBytes), float64(runDir)/float64(inBytes), first.cpu)
	return []row{
		pair("unchanged re-run", "codefeedback run", "sha256sum INPUT", ours, sum, 0, note),
		pair("unchanged re-run", "codefeedback run", "python3 read+sha256", ours, py, 2, ""),
	}, nil
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func treeSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if st, err := d.Info(); err == nil {
				n += st.Size()
			}
		}
		return nil
	})
	return n
}
