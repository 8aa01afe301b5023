package store

import (
	"context"
	"errors"
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

// failingCache fails every call.
type failingCache struct{}

func (failingCache) Get(context.Context, string, string) ([]byte, bool, error) {
	return nil, false, errors.New("disk gone")
}

func (failingCache) Put(context.Context, string, string, []byte) error {
	return errors.New("disk gone")
}

// Memo computes on a miss, stores what keep accepts, answers the next call
// from the store, passes compute's error through and names the bucket in
// the store's.
func TestMemo(t *testing.T) {
	ctx := context.Background()
	errCompute := errors.New("compute failed")
	type call struct {
		name    string
		c       Cache
		key     string
		value   int
		err     error
		wantV   int
		wantHit bool
		wantErr string
		calls   int // compute's calls after this one
	}
	c := mapCache{}
	calls := 0
	for _, tc := range []call{
		{name: "miss computes and stores", c: c, key: "a", value: 1, wantV: 1, calls: 1},
		{name: "hit does not compute", c: c, key: "a", value: 2, wantV: 1, wantHit: true, calls: 1},
		{name: "a value keep refuses is not stored", c: c, key: "neg", value: -1, wantV: -1, calls: 2},
		{name: "so it is computed again", c: c, key: "neg", value: -1, wantV: -1, calls: 3},
		{name: "compute's error as it is", c: c, key: "b", err: errCompute, wantErr: "compute failed", calls: 4},
		{name: "nil cache computes every time", c: nil, key: "a", value: 5, wantV: 5, calls: 5},
		{name: "store error names the bucket", c: failingCache{}, key: "a", value: 5, wantErr: "store: get b: disk gone", calls: 5},
	} {
		v, hit, err := Memo(ctx, tc.c, "b", tc.key, func(v int) bool { return v >= 0 }, func() (int, error) {
			calls++
			return tc.value, tc.err
		})
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if v != tc.wantV || hit != tc.wantHit || gotErr != tc.wantErr || calls != tc.calls {
			t.Errorf("%s: got %d, hit %v, err %q, %d calls; want %d, hit %v, err %q, %d calls",
				tc.name, v, hit, gotErr, calls, tc.wantV, tc.wantHit, tc.wantErr, tc.calls)
		}
		if tc.err != nil && !errors.Is(err, tc.err) {
			t.Errorf("%s: got %v, want compute's error itself", tc.name, err)
		}
	}
}
