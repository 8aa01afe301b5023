package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/codefeedback/codefeedback/schema"
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

// publishQuarantine gathers the stages' quarantine files into the run's
// quarantine.jsonl (written, possibly empty, on every run that ran a
// stage, so the manifest, the report and the file always agree).
func (r *runner) publishQuarantine(files []string) error {
	path := filepath.Join(r.dir, quarantineFile)
	a, err := createAtomic(path)
	if err != nil {
		return err
	}
	var n int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			a.Abort()
			return fmt.Errorf("pipeline: %w", err)
		}
		n += int64(bytes.Count(b, []byte{'\n'}))
		a.Write(b)
	}
	if err := a.Commit(); err != nil {
		return err
	}
	r.man.QuarantineFile, r.man.QuarantineCount = path, n
	return nil
}

// published is what a run knows of an output file it wrote: from which
// stage output (its hash), in which format and kind, and the file's size and
// modification time right after the write.
type published struct {
	Source  string `json:"source"`
	Bytes   int64  `json:"bytes"`
	ModTime int64  `json:"mtime_ns"`
	Items   int64  `json:"items"`
}

// publishedFile lists the outputs written in the run directory, by path.
const publishedFile = "published.json"

// publishOutputs writes each configured output from its stage's items. An
// output that the same stage output already produced, in the same format
// and kind, and that nobody changed since (same size and modification
// time) is left as it is: an unchanged re-run rewrites nothing.
func (r *runner) publishOutputs(ctx context.Context) error {
	stamps := map[string]published{}
	if b, err := os.ReadFile(filepath.Join(r.dir, publishedFile)); err == nil {
		_ = json.Unmarshal(b, &stamps) // unreadable: every output is written again
	}
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
		source := m.OutHash + "\t" + o.Format + "\t" + o.Kind
		if p, ok := stamps[o.Path]; ok && p.Source == source && m.OutHash != "" {
			if st, err := os.Stat(o.Path); err == nil && st.Size() == p.Bytes && st.ModTime().UnixNano() == p.ModTime {
				r.man.Outputs = append(r.man.Outputs, OutputRecord{Path: o.Path, Format: o.Format, From: o.From, Kind: o.Kind, Items: p.Items})
				continue
			}
		}
		w, err := f(o.Path)
		if err != nil {
			return fmt.Errorf("output %s: %w", o.Path, err)
		}
		var n int64
		for it, err := range readItems(ctx, r.db, filepath.Join(r.dir, m.Output)) {
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
		delete(stamps, o.Path)
		if st, err := os.Stat(o.Path); err == nil {
			stamps[o.Path] = published{Source: source, Bytes: st.Size(), ModTime: st.ModTime().UnixNano(), Items: n}
		}
		r.man.Outputs = append(r.man.Outputs, OutputRecord{Path: o.Path, Format: o.Format, From: o.From, Kind: o.Kind, Items: n})
	}
	b, _ := json.Marshal(stamps)
	return schema.WriteFileAtomic(filepath.Join(r.dir, publishedFile), b)
}
