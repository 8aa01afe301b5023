package store

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// packValues are values around packing's edges: empty, short (raw), long
// and compressible (zstd), long and random (raw, as zstd would not save).
func packValues() map[string][]byte {
	random := make([]byte, 4096)
	x := uint32(1)
	for i := range random {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		random[i] = byte(x)
	}
	return map[string][]byte{
		"empty":  {},
		"short":  []byte("O{\"id\":\"q1\"}\n"),
		"text":   []byte("O" + strings.Repeat(`{"id":"q","kind":"query","data":{"text":"sum the list"}}`+"\n", 40)),
		"random": random,
	}
}

// TestPackedValuesRoundTrip: a new store packs its values (text shrinks on
// disk) and every value reads back byte for byte, from the log before a
// checkpoint, from bbolt after reopening, through Get and GetMany.
func TestPackedValuesRoundTrip(t *testing.T) {
	ctx := context.Background()
	b, path := newBolt(t)
	if !b.packed {
		t.Fatal("a new store does not pack values")
	}
	vals := packValues()
	var keys []string
	for k, v := range vals {
		if err := b.Put(ctx, "items", k, v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	check := func(b *Bolt, when string) {
		t.Helper()
		got, err := b.GetMany(ctx, "items", keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range keys {
			v, ok, err := b.Get(ctx, "items", k)
			if err != nil || !ok || !bytes.Equal(v, vals[k]) || !bytes.Equal(got[i], vals[k]) {
				t.Errorf("%s: %s: Get %q %v %v, GetMany %q; want %q", when, k, v, ok, err, got[i], vals[k])
			}
		}
	}
	check(b, "before close")
	b = reopen(t, b, path, true)
	check(b, "after reopen")
	err := b.db.View(func(tx *bolt.Tx) error {
		if n := len(tx.Bucket([]byte("items")).Get([]byte("text"))); n >= len(vals["text"])/4 {
			t.Errorf("text value takes %d bytes in bbolt, want well under %d", n, len(vals["text"]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].Name != "items" || stats[0].Entries != len(vals) {
		t.Errorf("stats %+v, want the items bucket only with %d entries", stats, len(vals))
	}
	b.Close()
}

// TestLegacyStoreStaysRaw: a store made before packing keeps raw values
// (old and new ones), and merging it into a packed store, or a packed one
// into it, carries every value across.
func TestLegacyStoreStaysRaw(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	legacy := filepath.Join(dir, "legacy.db")
	db, err := bolt.Open(legacy, 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := []byte("O" + strings.Repeat("an old raw value ", 20))
	err = db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("items"))
		if err != nil {
			return err
		}
		return bk.Put([]byte("old"), old)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	vals := packValues()
	open := func(p string) *Bolt {
		t.Helper()
		b, err := OpenBolt(p, false)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	l := open(legacy)
	if l.packed {
		t.Fatal("a store with raw values was taken as packed")
	}
	for k, v := range vals {
		if err := l.Put(ctx, "items", k, v); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	l = open(legacy)
	defer l.Close()
	err = l.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket([]byte("items")).Get([]byte("text")); !bytes.Equal(v, vals["text"]) {
			t.Errorf("legacy store holds %q, want the raw value", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	packed := open(filepath.Join(dir, "packed.db"))
	defer packed.Close()
	if err := packed.Put(ctx, "items", "new", []byte("O"+strings.Repeat("a new packed value ", 20))); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"old": old, "new": []byte("O" + strings.Repeat("a new packed value ", 20))}
	for k, v := range vals {
		want[k] = v
	}
	for _, c := range []struct{ dst, src *Bolt }{{packed, l}, {l, packed}} {
		if _, err := c.dst.CopyFrom(c.src); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			got, ok, err := c.dst.Get(ctx, "items", k)
			if err != nil || !ok || !bytes.Equal(got, v) {
				t.Errorf("after merge (packed=%v from packed=%v): %s = %q %v %v, want %q", c.dst.packed, c.src.packed, k, got, ok, err, v)
			}
		}
	}
}
