package schema

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fenceRE is what inspect used to find fence languages; the byte scan must
// find the same ones.
var fenceRE = regexp.MustCompile("(?m)^```([A-Za-z0-9_+#-]+)")

var fenceTexts = []string{
	"no code",
	"```python\nprint(1)\n```",
	"Here:\n```Python3 title\nx\n```\nand\n```js\ny\n```\n``` \n```c++\n",
	"```\nplain\n```\n  ```go\nindented\n```",
	"text ```python inline``` text\n```bash",
	strings.Repeat("line of prose that is not code at all\n", 50) + "```sql\nselect 1\n```\n",
}

func TestFenceLanguagesMatchesRegexp(t *testing.T) {
	for _, text := range fenceTexts {
		checkFenceLanguages(t, text)
	}
	fs := fences("a\n```python\nx = 1\n```\nb\n```js\nunclosed")
	if len(fs) != 2 || fs[0].Lang != "python" || fs[0].Code != "x = 1" || !fs[0].Closed || fs[1].Closed || fs[1].Code != "unclosed" {
		t.Errorf("fences: %+v", fs)
	}
}

func FuzzFenceLanguages(f *testing.F) {
	for _, text := range fenceTexts {
		f.Add(text)
	}
	f.Fuzz(checkFenceLanguages)
}

// checkFenceLanguages compares the byte scan with fenceRE on one text.
func checkFenceLanguages(t *testing.T, text string) {
	var want, got []string
	for _, m := range fenceRE.FindAllStringSubmatch(text, -1) {
		want = append(want, m[1])
	}
	FenceLanguages(text, func(l string) { got = append(got, l) })
	if !slices.Equal(got, want) {
		t.Errorf("FenceLanguages(%.60q) = %v, want %v", text, got, want)
	}
}

// BenchmarkFenceScan compares the byte scan with the regular expression
// inspect used (run both; the ratio is the speed-up), on a message of the
// size Code-Feedback's assistant turns have.
func BenchmarkFenceScan(b *testing.B) {
	msg := strings.Repeat("Some explanation of the approach, with `inline` code.\n", 20) +
		"```python\n" + strings.Repeat("def f(x):\n    return x + 1\n", 15) + "```\n" + strings.Repeat("More text.\n", 10)
	b.Run("regexp", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			for _, m := range fenceRE.FindAllStringSubmatch(msg, -1) {
				_ = strings.ToLower(m[1])
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(msg)))
		for b.Loop() {
			FenceLanguages(msg, func(l string) { _ = strings.ToLower(l) })
		}
	})
}
