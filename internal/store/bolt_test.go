package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestBoltPutGetAcrossCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "store.db")
	b, err := OpenBolt(path, false)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.Put(ctx, "items", Key(i), []byte(fmt.Sprint("v", i))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if v, ok, err := b.Get(ctx, "items", Key(7)); err != nil || !ok || string(v) != "v7" {
		t.Fatalf("get before close: got %q %v %v want v7", v, ok, err)
	}
	// Snapshot the files as a crash would leave them (no Close, so the
	// entries are only in the log), plus a torn half record at the end.
	crash := filepath.Join(t.TempDir(), "store.db")
	for _, suffix := range []string{"", ".wal.1", ".wal"} {
		data, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == ".wal" {
			if len(data) == 0 && suffix == ".wal" {
				t.Fatal("log is empty before close; entries were not logged")
			}
			rec := appendRecord(nil, "items", "torn", []byte("never acknowledged"))
			data = append(data, rec[:len(rec)-3]...)
		}
		if err := os.WriteFile(crash+suffix, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, crash} {
		r, err := OpenBolt(p, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			v, ok, err := r.Get(ctx, "items", Key(i))
			if err != nil || !ok || string(v) != fmt.Sprint("v", i) {
				t.Fatalf("%s: entry %d: got %q %v %v", p, i, v, ok, err)
			}
		}
		if _, ok, _ := r.Get(ctx, "items", "torn"); ok {
			t.Fatalf("%s: a torn record was replayed", p)
		}
		st, err := r.Stats()
		if err != nil || len(st) != 1 || st[0].Entries != 200 {
			t.Fatalf("%s: stats got %+v, %v want 200 entries in items", p, st, err)
		}
		n, err := r.Retain(func(bucket, key string) bool { return key != Key(3) })
		if err != nil || n != 1 {
			t.Fatalf("retain: deleted %d, %v want 1", n, err)
		}
		// A bucket left empty goes too.
		if n, err := r.Retain(func(bucket, key string) bool { return false }); err != nil || n != 199 {
			t.Fatalf("retain none: deleted %d, %v want 199", n, err)
		}
		if st, err := r.Stats(); err != nil || len(st) != 0 {
			t.Fatalf("%s: stats after retaining none got %+v, %v want no bucket", p, st, err)
		}
		r.Close()
	}
}

func TestBoltCopyFromReadOnlyWithLog(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "store.db")
	b, _ := OpenBolt(src, false)
	b.Put(ctx, "llm", "k1", []byte("a"))
	b.Close()
	// An unapplied log entry must be merged too.
	if err := os.WriteFile(src+".wal", appendRecord(nil, "items", "k2", []byte("b")), 0o644); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenBolt(src, true)
	if err != nil {
		t.Fatal(err)
	}
	dst, _ := OpenBolt(filepath.Join(t.TempDir(), "store.db"), false)
	if _, err := dst.CopyFrom(ro); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	for _, c := range []struct{ bucket, key, want string }{{"llm", "k1", "a"}, {"items", "k2", "b"}} {
		v, ok, _ := dst.Get(ctx, c.bucket, c.key)
		if !ok || string(v) != c.want {
			t.Fatalf("merged %s/%s: got %q %v want %q", c.bucket, c.key, v, ok, c.want)
		}
	}
	dst.Close()
}

// TestBoltBackgroundCheckpoints writes past several checkpoints while
// reading, then reopens: every entry is readable throughout and after.
func TestBoltBackgroundCheckpoints(t *testing.T) {
	ctx := context.Background()
	b, path := newBolt(t)
	val := make([]byte, 1000)
	const n = 3000 // about 6 checkpoints of 512 KiB
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if err := b.Put(ctx, "items", Key(i), append([]byte(fmt.Sprint(i, ":")), val...)); err != nil {
					t.Error(err)
					return
				}
				if v, ok, err := b.Get(ctx, "items", Key(i)); err != nil || !ok || len(v) != len(val)+len(fmt.Sprint(i, ":")) {
					t.Errorf("read back %d: got %q %v %v", i, v, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	r := reopen(t, b, path, false)
	defer r.Close()
	st, _ := r.Stats()
	if len(st) != 1 || st[0].Entries != n {
		t.Fatalf("after reopen: %+v want %d entries", st, n)
	}
}

// GetMany must see the same values as Get, whether an entry is still in the
// log (pending), being checkpointed, or in bbolt.
func TestBoltGetMany(t *testing.T) {
	ctx := context.Background()
	b, path := newBolt(t)
	// Enough data to force checkpoints, so entries are in all three places.
	const n = 3000
	val := func(i int) []byte { return []byte(fmt.Sprintf("v%d-%0400d", i, i)) }
	for i := range n {
		if i%2 == 0 {
			b.PutAsync("items", Key(i), val(i))
		}
	}
	if err := b.Put(ctx, "items", Key(-1), []byte("last")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		keys := make([]string, n)
		for i := range n {
			keys[i] = Key(i)
		}
		got, err := b.GetMany(ctx, "items", keys)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if want := val(i); i%2 == 0 && string(got[i]) != string(want) {
				t.Fatalf("%s: GetMany key %d = %.20q, want %.20q", when, i, got[i], want)
			}
			if i%2 == 1 && got[i] != nil {
				t.Fatalf("%s: GetMany key %d = %.20q, want absent", when, i, got[i])
			}
		}
		if got, err := b.GetMany(ctx, "absent-bucket", keys[:3]); err != nil || got[0] != nil {
			t.Fatalf("%s: GetMany of a missing bucket = %q, %v; want nil values", when, got, err)
		}
	}
	check("before close")
	b = reopen(t, b, path, false)
	defer b.Close()
	check("after reopen")
}
