package leak

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/codefeedback/codefeedback/internal/benchmarks"
	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

func TestLoadKnown(t *testing.T) {
	sharedtest.Path(t, "evalplus/MbppPlus.jsonl.gz")
	bs, err := Load([]string{"humaneval", "MBPP", "humaneval+", "mbpp+"}, LoadOptions{Dir: sharedtest.DataDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"humaneval": 164, "mbpp": 974, "humaneval+": 164, "mbpp+": 378}
	for _, b := range bs {
		if got := len(b.Problems); got != want[b.Name] {
			t.Errorf("%s: got %d problems, want %d", b.Name, got, want[b.Name])
		}
	}
	if len(bs) != 4 {
		t.Errorf("got %d benchmarks, want 4", len(bs))
	}
}

func TestLoadFileAndErrors(t *testing.T) {
	p := sharedtest.Path(t, "mbpp/sanitized-mbpp.json")
	bs, err := Load([]string{p}, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if bs[0].Name != "sanitized-mbpp.json" || len(bs[0].Problems) != 427 {
		t.Errorf("file benchmark: got %s with %d problems, want sanitized-mbpp.json with 427", bs[0].Name, len(bs[0].Problems))
	}
	if _, err := Load([]string{"no-such-bench"}, LoadOptions{}); err == nil {
		t.Errorf("unknown name: got nil error")
	}
	if _, err := Load([]string{"humaneval"}, LoadOptions{Dir: t.TempDir()}); err == nil {
		t.Errorf("missing file: got nil error")
	}
	// A known benchmark whose bytes differ from the published file.
	dir := t.TempDir()
	s, _ := benchmarks.Lookup("mbpp")
	b, err := os.ReadFile(sharedtest.Path(t, s.File))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "mbpp"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, s.File), b[:len(b)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load([]string{"mbpp"}, LoadOptions{Dir: dir}); !errors.Is(err, benchmarks.ErrChecksum) {
		t.Errorf("altered file: got %v, want ErrChecksum", err)
	}
	if _, err := Load([]string{"mbpp"}, LoadOptions{Dir: dir, SkipChecksum: true}); err != nil {
		t.Errorf("altered file with SkipChecksum: %v", err)
	}
}

func TestRunStreamError(t *testing.T) {
	a, err := New([]Benchmark{{Name: "tiny", Problems: []schema.Problem{{Query: schema.Query{ID: "t1", Text: "x"}, Solution: "def f(a):\n    return a*2\n"}}}}, Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	stream := func(yield func(*schema.Dialogue, error) bool) {
		for i := 0; i < 100; i++ {
			if !yield(&schema.Dialogue{ID: "d"}, nil) {
				return
			}
		}
		yield(nil, boom)
	}
	if _, err := a.Run(context.Background(), stream, nil); !errors.Is(err, boom) {
		t.Errorf("got %v, want the stream's error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.Run(ctx, Slice(make([]schema.Dialogue, 10)), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v, want context.Canceled", err)
	}
	seen := 0
	stop := errors.New("stop")
	_, err = a.Run(context.Background(), Slice(make([]schema.Dialogue, 50)), func(r *Result) error {
		if r.Seq != seen {
			t.Errorf("each saw seq %d, want %d (input order)", r.Seq, seen)
		}
		seen++
		if seen == 20 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("each error: got %v, want it returned", err)
	}
}
