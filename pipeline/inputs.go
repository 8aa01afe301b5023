package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/codefeedback/codefeedback/internal/remote"
)

// hashWriter hashes and counts lines written to an atomic file.
type hashWriter struct {
	a     *atomicFile
	h     hash.Hash
	lines int64
}

func newHashWriter(path string) (*hashWriter, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	return &hashWriter{a: a, h: sha256.New()}, nil
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	return w.a.Write(p)
}

func (w *hashWriter) sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// materializeInputs reads every input through its format, applies the shard
// and --limit, and writes the items as the "inputs" pseudo-stage's output.
func (r *runner) materializeInputs(ctx context.Context) error {
	w, err := newHashWriter(filepath.Join(r.stageDir(InputsName), "out.jsonl"))
	if err != nil {
		return err
	}
	var n int64
	var buf []byte
	for _, in := range r.cfg.Inputs {
		rec := InputRecord{Path: in.Path, Format: in.Format}
		local := in.Path
		if remote.IsURL(in.Path) {
			// Downloaded once into the user cache; a re-run revalidates
			// the copy by its ETag and downloads nothing if it is current.
			rf, err := remote.Fetch(ctx, in.Path, remote.Options{Progress: r.o.Progress})
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: %w", in.Path, err)
			}
			local, rec.URL, rec.Local = rf.Path, rf.URL, rf.Path
			if rf.Downloaded {
				r.log.Info("downloaded input", "input", in.Path, "bytes", rf.Bytes, "sha256", rf.SHA256)
			}
		}
		rec.SHA256, rec.Bytes, err = fileSHA256(local)
		if err != nil {
			w.a.Abort()
			return err
		}
		f, _ := lookupFormat(in.Format)
		for it, err := range f(ctx, local) {
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: %w", in.Path, err)
			}
			rec.Items++
			if !r.o.Shard.Has(it.ID) || (r.o.Limit > 0 && n >= int64(r.o.Limit)) {
				continue
			}
			buf, err = appendItem(buf[:0], it)
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: item %s: %w", in.Path, it.ID, err)
			}
			w.Write(append(buf, '\n'))
			n++
		}
		r.man.Inputs = append(r.man.Inputs, rec)
	}
	if err := w.a.Commit(); err != nil {
		return err
	}
	r.done[InputsName] = &marker{OutHash: w.sum(), Output: filepath.Join("stages", InputsName, "out.jsonl"), Counts: Counts{Out: n}}
	return nil
}

func fileSHA256(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("pipeline: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("pipeline: read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
