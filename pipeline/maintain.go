package pipeline

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/codefeedback/codefeedback/internal/store"
	"github.com/codefeedback/codefeedback/schema"
)

// MergeReport says what Merge copied.
type MergeReport struct {
	Entries int `json:"entries"`
	Sets    int `json:"sets"`
}

// Merge combines the stores of finished shard run directories into dst. A
// following `run` on dst (without --shard) then finds every per-item result
// of every shard in the store, computes nothing again, and runs the
// whole-set stages on all items. Shard directories are opened read-only.
func Merge(ctx context.Context, dst string, shards []string) (MergeReport, error) {
	var rep MergeReport
	// A directory in use says so first; a refused shard set creates nothing.
	_, statErr := os.Stat(dst)
	if statErr != nil {
		if err := CheckShards(shards); err != nil {
			return rep, err
		}
	}
	lk, err := lockRunDir(dst)
	if err != nil {
		return rep, err
	}
	defer lk.unlock()
	if statErr == nil {
		if err := CheckShards(shards); err != nil {
			return rep, err
		}
	}
	db, err := store.OpenBolt(filepath.Join(dst, "store.db"), false)
	if err != nil {
		return rep, err
	}
	defer db.Close()
	for _, sd := range shards {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		src, err := store.OpenBolt(filepath.Join(sd, "store.db"), true)
		if err != nil {
			return rep, fmt.Errorf("merge %s: %w", sd, err)
		}
		n, err := db.CopyFrom(src)
		src.Close()
		if err != nil {
			return rep, err
		}
		rep.Entries += n
		sets := setFiles(sd)
		sidecars, _ := filepath.Glob(filepath.Join(sd, "sets", "*.stats.json"))
		for _, s := range append(sets, sidecars...) {
			b, err := os.ReadFile(s)
			if err != nil {
				return rep, fmt.Errorf("merge: %w", err)
			}
			if err := schema.WriteFileAtomic(filepath.Join(dst, "sets", filepath.Base(s)), b); err != nil {
				return rep, err
			}
			if _, ok := setKeyOf(s); ok {
				rep.Sets++
			}
		}
	}
	return rep, nil
}

// ErrBadShards is wrapped by Merge's error when the shard directories are
// not one complete, finished set: nothing was merged.
var ErrBadShards = errors.New("bad shard set")

// CheckShards checks that dirs are the finished runs of shards 0..N-1 of
// one N, each once: a failed or unfinished shard, a shard given twice (or
// the same directory twice) and a missing shard are refused, named.
func CheckShards(dirs []string) error {
	seen := map[string]string{} // shard -> dir
	abs := map[string]bool{}
	count := 0
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrBadShards, d, err)
		}
		if abs[a] {
			return fmt.Errorf("%w: %s is given twice", ErrBadShards, d)
		}
		abs[a] = true
		m, err := ReadManifest(d)
		if err != nil {
			return fmt.Errorf("%w: %s is not a finished run directory: %w", ErrBadShards, d, err)
		}
		if m.Status != "complete" && m.Status != "gate-tripped" {
			msg := m.Message
			if msg == "" {
				msg = "no message"
			}
			return fmt.Errorf("%w: shard %s in %s did not finish (status %s: %s); run it again before merging",
				ErrBadShards, m.Options.Shard, d, m.Status, msg)
		}
		sh, err := ParseShard(m.Options.Shard)
		if err != nil || (!sh.Enabled() && m.Options.Phase == nil) {
			return fmt.Errorf("%w: %s is not a shard's run (its manifest says shard %q)", ErrBadShards, d, m.Options.Shard)
		}
		if count == 0 {
			count = sh.Count
		} else if sh.Count != count {
			return fmt.Errorf("%w: %s is shard %s, but an earlier directory is one of %d shards", ErrBadShards, d, sh, count)
		}
		if prev, ok := seen[sh.String()]; ok {
			return fmt.Errorf("%w: shard %s is given twice: %s and %s", ErrBadShards, sh, prev, d)
		}
		seen[sh.String()] = d
	}
	var missing []string
	for i := range count {
		if _, ok := seen[Shard{Index: i, Count: count}.String()]; !ok {
			missing = append(missing, Shard{Index: i, Count: count}.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: shard %s missing (want all %d shards of the run)", ErrBadShards, strings.Join(missing, ", "), count)
	}
	return nil
}

// CacheStats describes a run directory's store.
type CacheStats struct {
	FileBytes int64               `json:"file_bytes"`
	Buckets   []store.BucketStats `json:"buckets"`
	Sets      int                 `json:"sets"`
	SetBytes  int64               `json:"set_bytes"`
}

// StoreStats reports the size of a run directory's store.
func StoreStats(runDir string) (cs CacheStats, err error) {
	err = withRunLock(runDir, func() error {
		// Read-write, so a log left by a crash is applied and counted.
		db, err := store.OpenBolt(filepath.Join(runDir, "store.db"), false)
		if err != nil {
			return err
		}
		defer db.Close()
		if cs.Buckets, err = db.Stats(); err != nil {
			return err
		}
		cs.FileBytes, _ = db.FileSize()
		for _, s := range setFiles(runDir) {
			if st, err := os.Stat(s); err == nil {
				cs.Sets++
				cs.SetBytes += st.Size()
			}
		}
		return nil
	})
	return cs, err
}

// GCReport says what GC removed.
type GCReport struct {
	Deleted     int `json:"deleted"`
	SetsRemoved int `json:"sets_removed"`
}

// GC removes stage results (bucket "items" and whole-set outputs) that the
// latest run of each stage did not reference. Other buckets (model requests,
// executions) are kept: they are cheap to keep and costly to redo. Run it
// after a complete run; a stage that was stopped early keeps only what its
// last completed run used, plus what the stopped run had reached.
func GC(runDir string) (rep GCReport, err error) {
	err = withRunLock(runDir, func() error {
		keep, err := gcKeep(runDir)
		if err != nil {
			return err
		}
		db, err := store.OpenBolt(filepath.Join(runDir, "store.db"), false)
		if err != nil {
			return err
		}
		defer db.Close()
		rep.Deleted, err = db.Retain(func(bucket, key string) bool {
			return bucket != ItemsBucket || keep[bucket+"\t"+key]
		})
		if err != nil {
			return err
		}
		for _, s := range setFiles(runDir) {
			if k, _ := setKeyOf(s); !keep["set\t"+k] {
				if os.Remove(s) == nil {
					rep.SetsRemoved++
				}
				os.Remove(setStatsPath(s)) // absent for sets made before sidecars
			}
		}
		return nil
	})
	return rep, err
}

// gcKeep reads what the latest run of each stage used: "bucket\tkey" for
// store entries, "set\tkey" for whole-set outputs.
func gcKeep(runDir string) (map[string]bool, error) {
	keep := map[string]bool{}
	// A per-item stage's output keys (out.keys); a whole-set stage's set
	// and an earlier version's per-item results (refs).
	keyFiles, _ := filepath.Glob(filepath.Join(runDir, "stages", "*", keysFile))
	refFiles, _ := filepath.Glob(filepath.Join(runDir, "stages", "*", "refs"))
	if len(refFiles)+len(keyFiles) == 0 {
		return nil, fmt.Errorf("gc: %s has no completed stage; run the pipeline first", runDir)
	}
	for _, kf := range keyFiles {
		for k, err := range readKeys(kf) {
			if err != nil {
				return nil, fmt.Errorf("gc: %w", err)
			}
			keep[ItemsBucket+"\t"+k] = true
		}
	}
	for _, rf := range refFiles {
		f, err := os.Open(rf)
		if err != nil {
			return nil, fmt.Errorf("gc: %w", err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			keep[sc.Text()] = true
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("gc: read %s: %w", rf, err)
		}
	}
	return keep, nil
}

// setFiles lists a run directory's whole-set outputs, compressed or not.
func setFiles(runDir string) []string {
	var out []string
	for _, pat := range []string{"*.jsonl.zst", "*.jsonl"} {
		m, _ := filepath.Glob(filepath.Join(runDir, "sets", pat))
		out = append(out, m...)
	}
	return out
}
