package pipeline

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMergeRefusesBadShardSets: a failed, duplicated, foreign or missing
// shard is refused, named, and nothing is merged.
func TestMergeRefusesBadShardSets(t *testing.T) {
	resetCalls()
	failures.Clear()
	y := onQueries(`
  - {stage: t-suffix, name: a}
`)
	dir, file := setup(t, 30, y)
	cfg := mustLoad(t, file)
	shard := func(name string, sh Shard) string {
		cfg.RunDir = filepath.Join(dir, name)
		if _, err := Run(context.Background(), cfg, RunOptions{Shard: sh}); err != nil {
			t.Fatal(err)
		}
		return cfg.RunDir
	}
	s0, s1, s2 := shard("s0", Shard{0, 3}), shard("s1", Shard{1, 3}), shard("s2", Shard{2, 3})
	other := shard("other", Shard{1, 2})
	failed := filepath.Join(dir, "failed")
	if err := os.MkdirAll(failed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(failed, "manifest.json"), []byte(`{"status":"failed","message":"stage a: boom","options":{"shard":"2/3"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		dirs []string
		want string
	}{
		{"missing", []string{s0, s2}, "shard 1/3 missing"},
		{"duplicated directory", []string{s0, s1, s1, s2}, "given twice"},
		{"failed", []string{s0, s1, failed}, "did not finish (status failed: stage a: boom)"},
		{"other count", []string{s0, s1, s2, other}, "one of 3 shards"},
		{"not a run", []string{s0, s1, filepath.Join(dir, "nothing")}, "not a finished run directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			into := filepath.Join(t.TempDir(), "merged")
			_, err := Merge(context.Background(), into, tc.dirs)
			if !errors.Is(err, ErrBadShards) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("merge error %v, want ErrBadShards with %q", err, tc.want)
			}
			if _, err := os.Stat(into); !os.IsNotExist(err) {
				t.Errorf("a refused merge created %s", into)
			}
		})
	}
	if _, err := Merge(context.Background(), filepath.Join(dir, "merged"), []string{s2, s0, s1}); err != nil {
		t.Fatalf("a complete set in any order: %v", err)
	}
}

// TestLimitIsOfTheWholeInput: --limit N with --shard i/K takes the first N
// items of the whole input; the K shards together hold exactly them.
func TestLimitIsOfTheWholeInput(t *testing.T) {
	y := onQueries(`
  - {stage: t-suffix, name: a}
`)
	dir, file := setup(t, 90, y)
	cfg := mustLoad(t, file)
	total := int64(0)
	for i := range 3 {
		cfg.RunDir = filepath.Join(dir, "s", itoa(i))
		m, err := Run(context.Background(), cfg, RunOptions{Shard: Shard{i, 3}, Limit: 30})
		if err != nil {
			t.Fatal(err)
		}
		total += stageRec(t, m, "a").Counts.In
	}
	if total != 30 {
		t.Fatalf("3 shards of --limit 30 processed %d items, want 30", total)
	}
}
