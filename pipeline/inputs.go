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
	"strings"

	"github.com/codefeedback/codefeedback/internal/remote"
	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
	"github.com/klauspost/compress/zstd"
)

// hashWriter hashes and counts lines written to an atomic file. The hash is
// of the lines themselves, whether or not the file is compressed.
type hashWriter struct {
	a     *atomicFile
	h     hash.Hash
	lines int64
	zw    *zstd.Encoder // for a .zst file: compresses into a
}

func newHashWriter(path string) (*hashWriter, error) {
	a, err := createAtomic(path)
	if err != nil {
		return nil, err
	}
	w := &hashWriter{a: a, h: sha256.New()}
	if strings.HasSuffix(path, ".zst") {
		if w.zw, err = zstd.NewWriter(a, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedBetterCompression)); err != nil {
			a.Abort()
			return nil, fmt.Errorf("pipeline: %s: %w", path, err)
		}
		// Commit flushes the compressed stream before the file.
		a.flush = w.zw.Close
	}
	return w, nil
}

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.lines += int64(bytes.Count(p, []byte{'\n'}))
	if w.zw != nil {
		return w.zw.Write(p)
	}
	return w.a.Write(p)
}

func (w *hashWriter) sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// importedFile is the inputs' items in the run directory.
const importedFile = "out.jsonl.zst"

// importVersion names the adapters' output: bump it when an input format
// would import the same file as different items, so a re-run imports again.
// 3: records without tests import as queries (InputSpec.As).
const importVersion = "3"

// materializeInputs reads every input through its format, applies the shard
// and --limit, and writes the items as the "inputs" pseudo-stage's output.
// An input set whose files (SHA-256), formats, shard, limit and program
// version match the previous import is not imported again: its items are
// already on disk, and hashing the files is the only pass over them.
func (r *runner) materializeInputs(ctx context.Context) error {
	recs := make([]InputRecord, len(r.cfg.Inputs))
	locals := make([]string, len(r.cfg.Inputs))
	for i, in := range r.cfg.Inputs {
		rec := InputRecord{Path: in.Path, Format: in.Format}
		local := in.Path
		if remote.IsURL(in.Path) {
			// Downloaded once into the user cache; a re-run revalidates
			// the copy by its ETag and downloads nothing if it is current.
			rf, err := remote.Fetch(ctx, in.Path, remote.Options{Progress: r.o.Progress})
			if err != nil {
				return fmt.Errorf("input %s: %w", in.Path, err)
			}
			local, rec.URL, rec.Local = rf.Path, rf.URL, rf.Path
			if rf.Downloaded {
				r.log.Info("downloaded input", "input", in.Path, "bytes", rf.Bytes, "sha256", rf.SHA256)
			}
		}
		var err error
		rec.SHA256, rec.Bytes, err = fileSHA256(local)
		if err != nil {
			return err
		}
		recs[i], locals[i] = rec, local
	}
	key := r.inputsKey(recs)
	if m, err := r.readMarker(InputsName); err == nil && m.Key == key && len(m.Inputs) == len(recs) {
		for i := range recs {
			recs[i].Items = m.Inputs[i].Items
		}
		r.man.Inputs = append(r.man.Inputs, recs...)
		r.done[InputsName] = m
		r.log.Info("inputs unchanged: not imported again", "items", m.Counts.Out)
		return nil
	}
	// The imported items are compressed (a fifth of their size): they
	// are read once per run that imports, and the input itself is kept.
	w, err := newHashWriter(filepath.Join(r.stageDir(InputsName), importedFile))
	if err != nil {
		return err
	}
	var n, seen int64
	var buf []byte
	for i, in := range r.cfg.Inputs {
		rec := &recs[i]
		f, _ := lookupFormat(in.Format)
		as, _ := schema.ParseAs(in.As) // checked by Load
		queries := 0
		for it, err := range f(ctx, locals[i]) {
			if err == nil {
				it, err = asKind(it, as)
			}
			if err != nil {
				w.a.Abort()
				return fmt.Errorf("input %s: %w", in.Path, err)
			}
			if it.Kind == KindQuery {
				queries++
			}
			rec.Items++
			// --limit N takes the first N items of the whole input, then
			// the shard its share of them: N shards of a --limit run
			// together hold exactly the unsharded run's items.
			seen++
			if (r.o.Limit > 0 && seen > int64(r.o.Limit)) || !r.o.Shard.Has(it.ID) {
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
		r.log.Info("input imported", "input", in.Path, "format", in.Format, "as", string(as), "items", rec.Items, "queries", queries)
	}
	r.man.Inputs = append(r.man.Inputs, recs...)
	if err := w.a.Commit(); err != nil {
		return err
	}
	m := &marker{Key: key, OutHash: w.sum(), Output: filepath.Join("stages", InputsName, importedFile), Counts: Counts{Out: n}, Inputs: recs}
	r.done[InputsName] = m
	if r.o.DryRun {
		return nil
	}
	// Last, as for a stage: the marker says the items above are on disk.
	return r.writeMarker(InputsName, m)
}

// asKind applies an input's `as` choice to one of its items: a problem the
// choice makes a query becomes a query item with the same id, its solution
// kept as the reference answer. Other items are returned as they are.
func asKind(it Item, as schema.As) (Item, error) {
	if it.Kind != KindProblem || as == schema.AsProblem {
		return it, nil
	}
	var p schema.Problem
	if err := it.Decode(&p); err != nil {
		return it, err
	}
	if !as.IsQuery(&p) {
		return it, nil
	}
	q := p.AsQuery()
	q.ID = it.ID
	return QueryItem(q)
}

// inputsKey identifies an import: every input's path, format and content
// hash, the shard, the limit and the program that imports.
func (r *runner) inputsKey(recs []InputRecord) string {
	type part struct{ Path, Format, As, SHA256 string }
	parts := make([]part, len(recs))
	for i, rec := range recs {
		as, _ := schema.ParseAs(r.cfg.Inputs[i].As)
		parts[i] = part{rec.Path, rec.Format, string(as), rec.SHA256}
	}
	var limit any = r.o.Limit
	if r.o.Shard.Enabled() && r.o.Limit > 0 {
		limit = fmt.Sprint(r.o.Limit, " of the whole input") // since --limit applies before --shard
	}
	return store.Key("inputs", importVersion, r.o.Version, parts, r.o.Shard.String(), limit)
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
