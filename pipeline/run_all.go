package pipeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"iter"
	"os"
	"path/filepath"

	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
)

// runAll runs a whole-set stage, or reuses its output when the stage key and
// the inputs are unchanged.
func (r *runner) runAll(ctx context.Context, s *StageSpec, st *stageCaps, key string, svc *Services, rec *StageRecord) error {
	srcs, inHash, total, err := r.sources(s)
	if err != nil {
		return err
	}
	setKey := store.Key(key, inHash)
	rel := setFile(setKey)
	path := filepath.Join(r.dir, rel)
	force := r.isForced(s.Name)
	if old := legacySetFile(setKey); !force && !fileExists(path) && fileExists(filepath.Join(r.dir, old)) {
		rel, path = old, filepath.Join(r.dir, old) // made by an earlier version
	}
	if !force && fileExists(path) {
		n, outHash, err := observeFile(path, st)
		if err != nil {
			return err
		}
		m := &marker{Key: key, InputHash: inHash, OutHash: outHash, Output: rel, Counts: Counts{In: total, Out: n, Cached: total}}
		m.Stats, _ = svc.Stats.Snapshot()
		// What the stage computed over the whole set (similarities, ratios)
		// is not in its items: take it from when the set was made.
		if saved, err := readSetStats(path); err == nil {
			for k, v := range saved {
				if _, seen := m.Stats[k]; !seen {
					m.Stats[k] = v
				}
			}
		}
		rec.Status, rec.Counts, rec.Output = "unchanged", m.Counts, rel
		r.done[s.Name] = m
		if r.o.DryRun {
			return nil
		}
		r.settleAllGates(s, st, m.Stats, rec)
		if err := r.writeRefs(s.Name, "set\t"+setKey+"\n"); err != nil {
			return err
		}
		return r.writeMarker(s.Name, m)
	}
	if r.o.DryRun {
		rec.Status = "dry-run"
		rec.Counts = Counts{In: total, WouldRun: total}
		if all, predicted, ok := r.inputShapes(s); ok {
			if predicted {
				rec.Counts = Counts{In: int64(len(all)), WouldRun: int64(len(all))}
			}
			r.estimate(s, st, rec, all, all, predicted)
		}
		return nil
	}
	w, err := newHashWriter(path)
	if err != nil {
		return err
	}
	p := startProgress(s.Name, total, r.o.Progress, r.log, r.o.ProgressInterval)
	// A whole-set stage's work mostly starts once it has read everything:
	// the display says which phase it is in instead of done=total, ETA 0.
	p.setPhase("reading input")
	svc.progress = p
	defer func() { svc.progress = nil }()
	var in int64
	seq := func(yield func(Item, error) bool) {
		for _, src := range srcs {
			for it, err := range readItems(ctx, r.db, src) {
				if err == nil {
					in++
					p.done.Add(1)
					p.fresh.Add(1)
				}
				if !yield(it, err) || err != nil {
					return
				}
			}
		}
		p.setPhase("working on the whole set")
	}
	emit := func(it Item) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.ID == "" || it.Kind == "" {
			return fmt.Errorf("stage emitted an item without id or kind")
		}
		b, err := appendItem(nil, it)
		if err != nil {
			return fmt.Errorf("encode output %s: %w", it.ID, err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
		if st.observe != nil {
			st.observe.Observe(it)
		}
		return nil
	}
	err = st.all.All(ctx, iter.Seq2[Item, error](seq), emit)
	p.finish()
	rec.Counts = Counts{In: in, Out: w.lines, Fresh: in}
	if qerr := r.writeAllQuarantine(s, svc.Stats.takeRejects(), rec); qerr != nil && err == nil {
		err = qerr
	}
	if err == nil && st.check != nil {
		err = st.check.Check()
	}
	if err != nil {
		w.a.Abort()
		return err
	}
	if err := w.a.Commit(); err != nil {
		return err
	}
	m := &marker{Key: key, InputHash: inHash, OutHash: w.sum(), Output: rel, Counts: rec.Counts}
	m.Stats, _ = svc.Stats.Snapshot()
	if err := writeSetStats(path, m.Stats); err != nil {
		return err
	}
	os.Remove(filepath.Join(r.dir, legacySetFile(setKey))) // a forced run replaced it
	rec.Status, rec.Output = "ran", rel
	r.settleAllGates(s, st, m.Stats, rec)
	r.done[s.Name] = m
	if err := r.writeRefs(s.Name, "set\t"+setKey+"\n"); err != nil {
		return err
	}
	return r.writeMarker(s.Name, m)
}

// setStatsPath is the sidecar holding the statistics a whole-set stage
// computed when it made the set at setPath.
func setStatsPath(setPath string) string {
	k, _ := setKeyOf(setPath)
	return filepath.Join(filepath.Dir(setPath), k+".stats.json")
}

func writeSetStats(setPath string, stats map[string]float64) error {
	b, err := json.Marshal(stats)
	if err != nil {
		return fmt.Errorf("encode stats: %w", err)
	}
	return schema.WriteFileAtomic(setStatsPath(setPath), b)
}

func readSetStats(setPath string) (map[string]float64, error) {
	b, err := os.ReadFile(setStatsPath(setPath))
	if err != nil {
		return nil, err
	}
	var m map[string]float64
	return m, json.Unmarshal(b, &m)
}

// observeFile counts and hashes an item file, calling st.Observe per item.
func observeFile(path string, st *stageCaps) (int64, string, error) {
	h := sha256.New()
	var n int64
	for ln, err := range readLines(path) {
		if err != nil {
			return 0, "", err
		}
		h.Write(ln.data)
		h.Write([]byte{'\n'})
		n++
		if st.observe != nil {
			if it, err := parseItem(bytes.Clone(ln.data)); err == nil {
				st.observe.Observe(it)
			}
		}
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}
