package benchtest

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPerturbed(t *testing.T) {
	base := []string{"sort a list of 10 numbers", "reverse the words of a sentence", "sum two integers"}
	got := Perturbed(base, 8, 1)
	if len(got) != 8 {
		t.Fatalf("got %d texts, want 8", len(got))
	}
	if !slices.Equal(got[:3], base) {
		t.Errorf("copy 0 = %q, want base %q", got[:3], base)
	}
	if again := Perturbed(base, 8, 1); !slices.Equal(again, got) {
		t.Errorf("seed 1 gave %q, then %q", got, again)
	}
	if other := Perturbed(base, 8, 2); slices.Equal(other, got) {
		t.Errorf("seeds 1 and 2 gave the same texts %q", got)
	}
	for i, s := range got[3:] {
		b := base[i%len(base)]
		// Every word of a perturbed copy comes from its base text, a
		// prefix or suffix, or is a changed number.
		words := strings.Fields(b + " " + strings.Join(prefixes, " ") + " " + strings.Join(suffixes, " "))
		for _, w := range strings.Fields(s) {
			if !slices.Contains(words, w) && strings.Trim(w, "0123456789") != "" {
				t.Errorf("copy %q of %q has the foreign word %q", s, b, w)
			}
		}
	}
}

func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f.txt")
	n := WriteFile(t, path, func(w io.Writer) {
		for i := range 3 {
			fmt.Fprintf(w, "line %d\n", i)
		}
	})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 0\nline 1\nline 2\n"; string(b) != want || n != int64(len(want)) {
		t.Errorf("got %q (size %d), want %q (size %d)", b, n, want, len(want))
	}
}

func TestCPUAndPeakRSS(t *testing.T) {
	if c := CPU(t); c <= 0 {
		t.Errorf("CPU = %v, want > 0 for a running process", c)
	}
	if m := PeakRSSMiB(); m <= 0 {
		t.Errorf("PeakRSSMiB = %v, want > 0 for a running process", m)
	}
}
