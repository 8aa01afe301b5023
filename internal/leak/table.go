package leak

import "math/bits"

// hashTable maps uint64 keys (hashes) to int32 values with open addressing
// and linear probing in one flat array of slots, key and value side by
// side so a probe touches one cache line. The audit probes the index for
// every line window, n-gram and code k-gram that passes the filter; a Go
// map's probe costs several times more, and a flat table has no pointers
// for the garbage collector to scan. Built once, then only read (safe for
// concurrent readers).
type hashTable struct {
	slots []slot
	shift uint // 64 - log2(len(slots))
	// Key 0 marks an empty slot; a real 0 key is kept aside.
	zero    int32
	hasZero bool
	n       int
}

type slot struct {
	key uint64
	val int32
}

// newHashTable returns a table for about n keys (at most half full).
func newHashTable(n int) *hashTable {
	b := max(4, bits.Len(uint(2*n)))
	return &hashTable{slots: make([]slot, 1<<b), shift: uint(64 - b)}
}

// home spreads a key over the table by its top bits after a multiply
// (Fibonacci hashing), so keys whose low bits agree still spread.
func (t *hashTable) home(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// put sets k's value.
func (t *hashTable) put(k uint64, v int32) {
	if k == 0 {
		if !t.hasZero {
			t.n++
		}
		t.zero, t.hasZero = v, true
		return
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case 0:
			t.slots[i] = slot{k, v}
			t.n++
			return
		case k:
			t.slots[i].val = v
			return
		}
	}
}

// get returns k's value.
func (t *hashTable) get(k uint64) (int32, bool) {
	if k == 0 {
		return t.zero, t.hasZero
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		switch t.slots[i].key {
		case k:
			return t.slots[i].val, true
		case 0:
			return 0, false
		}
	}
}

// Len returns the number of keys.
func (t *hashTable) Len() int { return t.n }

// each calls fn for every key.
func (t *hashTable) each(fn func(k uint64)) {
	if t.hasZero {
		fn(0)
	}
	for _, s := range t.slots {
		if s.key != 0 {
			fn(s.key)
		}
	}
}

// freeze turns a build-time map of postings into a table from each key to
// its postings' index in the returned slice.
func freeze[V any](m map[uint64]V) (*hashTable, []V) {
	t := newHashTable(len(m))
	vals := make([]V, 0, len(m))
	for k, v := range m {
		t.put(k, int32(len(vals)))
		vals = append(vals, v)
	}
	return t, vals
}

// unionTable maps every key of the indexes' tables (table(x), nil for
// none) to a row of vals: the key's value in each index's table, in
// order, or -1 where that table lacks it.
func unionTable(xs []*Index, table func(*Index) *hashTable) (*hashTable, []int32) {
	row := map[uint64]int32{}
	var vals []int32
	for bi, x := range xs {
		t := table(x)
		if t == nil {
			continue
		}
		t.each(func(k uint64) {
			r, ok := row[k]
			if !ok {
				r = int32(len(row))
				row[k] = r
				for range xs {
					vals = append(vals, -1)
				}
			}
			vals[int(r)*len(xs)+bi], _ = t.get(k)
		})
	}
	at := newHashTable(len(row))
	for k, r := range row {
		at.put(k, r)
	}
	return at, vals
}
