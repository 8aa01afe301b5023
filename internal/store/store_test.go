package store

import (
	"context"
	"path/filepath"
	"testing"
)

// newBolt opens a new store in a temporary directory; the test closes it.
func newBolt(t *testing.T) (*Bolt, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	b, err := OpenBolt(path, false)
	if err != nil {
		t.Fatal(err)
	}
	return b, path
}

// reopen closes b and opens the store at path again, as a later run
// would; the test closes the store it returns.
func reopen(t *testing.T, b *Bolt, path string, readOnly bool) *Bolt {
	t.Helper()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenBolt(path, readOnly)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// mapCache is a Cache in memory.
type mapCache map[string][]byte

func (m mapCache) Get(_ context.Context, bucket, key string) ([]byte, bool, error) {
	v, ok := m[bucket+"/"+key]
	return v, ok, nil
}

func (m mapCache) Put(_ context.Context, bucket, key string, val []byte) error {
	m[bucket+"/"+key] = val
	return nil
}

// A value put as JSON comes back equal; a missing key and a value that
// does not decode are misses, not errors.
func TestJSONValues(t *testing.T) {
	ctx := context.Background()
	type episode struct {
		ID     string
		Reward float64
	}
	c := mapCache{}
	if err := PutJSON(ctx, c, "b", "k", episode{"t1", 0.5}); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := GetJSON[episode](ctx, c, "b", "k"); err != nil || !ok || got != (episode{"t1", 0.5}) {
		t.Errorf("got %+v, %v, %v; want the value put", got, ok, err)
	}
	if got, ok, err := GetJSON[episode](ctx, c, "b", "absent"); err != nil || ok || got != (episode{}) {
		t.Errorf("absent key: got %+v, %v, %v; want a miss", got, ok, err)
	}
	c["b/torn"] = []byte(`{"ID": "t2", "Rew`)
	if got, ok, err := GetJSON[episode](ctx, c, "b", "torn"); err != nil || ok || got != (episode{}) {
		t.Errorf("torn value: got %+v, %v, %v; want a zero miss", got, ok, err)
	}
	if err := PutJSON(ctx, c, "b", "bad", func() {}); err == nil {
		t.Error("a value JSON cannot encode: no error")
	}
}
