package registry

import (
	"fmt"
	"slices"
	"testing"
)

func TestNamed(t *testing.T) {
	r := Named[int]{Kind: "test: thing"}
	if got := r.Names(); len(got) != 0 {
		t.Fatalf("empty registry: names %v, want none", got)
	}
	if _, ok := r.Get("a"); ok {
		t.Fatal("empty registry: Get(a) found a value")
	}
	r.Add("b", 2)
	r.Add("a", 1)
	if got, want := r.Names(), []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("names %v, want %v", got, want)
	}
	if v, ok := r.Get("b"); !ok || v != 2 {
		t.Fatalf("Get(b) = %d, %v; want 2, true", v, ok)
	}
}

func TestNamedTwicePanics(t *testing.T) {
	r := Named[string]{Kind: "test: thing"}
	r.Add("x", "first")
	defer func() {
		got := fmt.Sprint(recover())
		if want := "test: thing registered twice: x"; got != want {
			t.Fatalf("panic %q, want %q", got, want)
		}
		if v, _ := r.Get("x"); v != "first" {
			t.Fatalf("after the second Add: x = %q, want the first value", v)
		}
	}()
	r.Add("x", "second")
}
