package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHTMLSkeleton(t *testing.T) {
	page := `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><style>body{margin:0}</style></head>
<body>
<section id="s" class="a b" style="color:red"><h2>Title   with
 spaces</h2>
<p>one <b>two</b> three</p>
<figure id="c"><svg class="chart" width="9"><rect x="1"/><text>9</text></svg></figure>
<pre><code><span class="k">def</span> f():
    pass</code></pre>
<p>a long text that is cut</p>
</section>
<script type="application/json" id="data">{"b": 1, "a": {"x": 2}}</script>
<script>var x = 1;</script>
</body></html>`
	want := `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <style> (CSS)
  <body>
    <section id="s" class="a b">
      <h2> Title with spaces
      <p>
        | one
        <b> two
        | three
      <figure id="c">
        <svg class="chart"> (chart)
      <pre> def f(): pass
      <p> a long text that is …
    <script id="data" type="application/json"> (JSON with keys: a, b)
    <script> (script)
`
	got, err := HTMLSkeleton(page, 20)
	if err != nil {
		t.Fatal(err)
	}
	if d := Diff(got, want); d != "" {
		t.Errorf("skeleton:\n%s\n%s", d, got)
	}
}

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, got, want string
		has             []string // substrings of the description; nil: equal
	}{
		{"equal", "a\nb\n", "a\nb\n", nil},
		{"changed line", "a\nB\nc", "a\nb\nc", []string{"line 2", `got:  "B"`, `want: "b"`}},
		{"got longer", "a\nb\nc", "a\nb", []string{"line 3", "got 3 lines, want 2", `got:  "c"`, "want: (no line"}},
		{"want longer", "a", "a\nb", []string{"line 2", "got:  (no line", `want: "b"`}},
		{"trailing newline", "a\n", "a", []string{"line 2", `got:  ""`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Diff(tc.got, tc.want)
			if tc.has == nil {
				if d != "" {
					t.Errorf("got %q, want no difference", d)
				}
				return
			}
			for _, s := range tc.has {
				if !strings.Contains(d, s) {
					t.Errorf("got %q, want it to contain %q", d, s)
				}
			}
		})
	}
}

// fakeT records what Check reports instead of failing the test.
type fakeT struct {
	testing.TB
	errors []string
}

func (f *fakeT) Helper()                           {}
func (f *fakeT) Errorf(format string, args ...any) { f.errors = append(f.errors, format) }

func TestCheck(t *testing.T) {
	// Compare even when this package's tests run with -update.
	defer func(u bool) { *update = u }(*update)
	*update = false
	dir := t.TempDir()
	p := filepath.Join(dir, "x.txt")
	f := &fakeT{TB: t}
	Check(f, p, "hello\n")
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "no golden file") {
		t.Fatalf("missing file: got errors %q, want one saying there is no golden file", f.errors)
	}
	if err := os.WriteFile(p, []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f = &fakeT{TB: t}
	Check(f, p, "hello\n")
	if len(f.errors) != 0 {
		t.Errorf("same text: got errors %q, want none", f.errors)
	}
	Check(f, p, "bye\n")
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "differs") {
		t.Errorf("other text: got errors %q, want one difference", f.errors)
	}
}
