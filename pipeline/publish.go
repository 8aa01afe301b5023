package pipeline

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// limitedPath names a --limit run's output: out/d.jsonl.gz -> out/d.limit-N.jsonl.gz.
func limitedPath(path string, n int) string {
	dir, base := filepath.Split(path)
	i := strings.IndexByte(base[min(1, len(base)):], '.')
	tag := ".limit-" + strconv.Itoa(n)
	if i < 0 {
		return dir + base + tag
	}
	i += min(1, len(base))
	return dir + base[:i] + tag + base[i:]
}

func (r *runner) publishDeadLetters(files []string) error {
	path := filepath.Join(r.dir, "dead-letters.jsonl")
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			a.Abort()
			return fmt.Errorf("pipeline: %w", err)
		}
		a.Write(b)
	}
	if err := a.Commit(); err != nil {
		return err
	}
	r.man.DeadFile = path
	return nil
}

// publishOutputs writes each configured output from its stage's items.
func (r *runner) publishOutputs(ctx context.Context) error {
	for _, o := range r.cfg.Outputs {
		m := r.done[o.From]
		if m == nil {
			r.log.Warn("output not written: its stage has no output in this run directory", "path", o.Path, "from", o.From)
			continue
		}
		f, _ := lookupOutput(o.Format)
		if r.o.Limit > 0 {
			// A trial run must not replace the full dataset under its name.
			o.Path = limitedPath(o.Path, r.o.Limit)
		}
		w, err := f(o.Path)
		if err != nil {
			return fmt.Errorf("output %s: %w", o.Path, err)
		}
		var n int64
		for it, err := range readItems(ctx, filepath.Join(r.dir, m.Output)) {
			if err != nil {
				w.Abort()
				return fmt.Errorf("output %s: %w", o.Path, err)
			}
			if o.Kind != "" && it.Kind != o.Kind {
				continue
			}
			if err := w.Write(it); err != nil {
				w.Abort()
				return fmt.Errorf("output %s: %w", o.Path, err)
			}
			n++
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("output %s: %w", o.Path, err)
		}
		r.man.Outputs = append(r.man.Outputs, OutputRecord{Path: o.Path, Format: o.Format, From: o.From, Kind: o.Kind, Items: n})
	}
	return nil
}
