package store

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// resultValue is a stage result of the kind the items bucket holds: a small
// JSON line, alike in shape from one item to the next, varied in words.
func resultValue(i int) []byte {
	words := []string{"sum", "list", "sorted", "binary", "search", "reverse", "string", "parse", "csv", "merge", "intervals", "prefix"}
	var b bytes.Buffer
	fmt.Fprintf(&b, `O{"id":"q%d","kind":"query","data":{"id":"q%d","text":"`, i, i)
	x := uint32(i*2654435761 + 1)
	for b.Len() < 300 {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b.WriteString(words[x%uint32(len(words))] + " ")
	}
	b.WriteString(`","language":"python"}}` + "\n")
	return b.Bytes()
}

func storedSize(t *testing.T, b *Bolt, bucket string) (n int, codecs map[byte]int) {
	t.Helper()
	codecs = map[byte]int{}
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, v []byte) error {
			n += len(v)
			codecs[v[0]]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, codecs
}

// TestDictionaryTrainedOnce: the first checkpoint with enough values of a
// bucket trains its dictionary; values read back byte for byte through it
// (read-write and read-only, after reopening), later values use it, a bucket
// with too few values gets none, and the store is marked as needing it.
func TestDictionaryTrainedOnce(t *testing.T) {
	ctx := context.Background()
	b, path := newBolt(t)
	const n = 3000 // about 2 checkpoints' worth
	var keys []string
	for i := range n {
		k := fmt.Sprintf("k%05d", i)
		keys = append(keys, k)
		b.PutAsync("items", k, resultValue(i))
	}
	for i := range 10 {
		if err := b.Put(ctx, "few", fmt.Sprint(i), resultValue(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		b, err := OpenBolt(path, ro)
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.GetMany(ctx, "items", keys)
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if !bytes.Equal(got[i], resultValue(i)) {
				t.Fatalf("read-only %v: value %d: got %q", ro, i, got[i])
			}
		}
		if v, ok, err := b.Get(ctx, "few", "3"); err != nil || !ok || !bytes.Equal(v, resultValue(3)) {
			t.Fatalf("few/3: %q %v %v", v, ok, err)
		}
		if b.dict.encoder("items") == nil || b.dict.encoder("few") != nil {
			t.Fatalf("dictionaries: items %v few %v; want one for items only", b.dict.encoder("items") != nil, b.dict.encoder("few") != nil)
		}
		size, codecs := storedSize(t, b, "items")
		raw := 0
		for i := range n {
			raw += len(resultValue(i))
		}
		// Without a dictionary these values pack to about 60% of their size.
		if codecs[valueDict] < n/2 || size > raw*45/100 {
			t.Errorf("items: %d of %d values use the dictionary, %d bytes for %d raw", codecs[valueDict], n, size, raw)
		}
		b.db.View(func(tx *bolt.Tx) error {
			if f := string(tx.Bucket([]byte(formatBucket)).Get([]byte(formatKey))); f != formatDict {
				t.Errorf("format %q want %q", f, formatDict)
			}
			return nil
		})
		b.Close()
	}
}

// TestCopyFromDictionaryStore: a merge re-encodes values that need the
// source's dictionary, so the destination reads them without it.
func TestCopyFromDictionaryStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src, err := OpenBolt(filepath.Join(dir, "src.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		src.PutAsync("items", fmt.Sprint(i), resultValue(i))
	}
	src = reopen(t, src, filepath.Join(dir, "src.db"), true)
	defer src.Close()
	if src.dict.encoder("items") == nil {
		t.Fatal("source store has no dictionary")
	}
	dst, err := OpenBolt(filepath.Join(dir, "dst.db"), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dst.CopyFrom(src); err != nil {
		t.Fatal(err)
	}
	dst = reopen(t, dst, filepath.Join(dir, "dst.db"), true)
	defer dst.Close()
	for _, i := range []int{0, 777, 1999} {
		if v, ok, err := dst.Get(ctx, "items", fmt.Sprint(i)); err != nil || !ok || !bytes.Equal(v, resultValue(i)) {
			t.Fatalf("merged value %d: %q %v %v", i, v, ok, err)
		}
	}
}
