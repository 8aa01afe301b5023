package leak

import (
	"reflect"
	"slices"
	"testing"

	"github.com/codefeedback/codefeedback/internal/sharedtest"
	"github.com/codefeedback/codefeedback/schema"
)

func TestNormalizeLine(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"   \t  ", ""},
		{"    x = a+b", "x=a+b"},
		{"x=a + b\r", "x=a+b"},
		{"\treturn   x", "return x"},
		{"for i in range( 1, n ) :", "for i in range(1,n):"},
		{"def f(a,  b):", "def f(a,b):"},
		{"def   f (a, b) :", "def f(a,b):"},
		{"print ( 'a  b' )", "print('a b')"}, // whitespace inside strings is folded too
		{"x  =  λ  y", "x=λ y"},
		{"if a and not b:", "if a and not b:"},
	}
	for _, c := range cases {
		if got := NormalizeLine(c.in); got != c.want {
			t.Errorf("NormalizeLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKeep(t *testing.T) {
	cases := []struct {
		line string
		opts LineOptions
		want bool
	}{
		{"", DefaultLineOptions, false},
		{"return", DefaultLineOptions, false},
		{"else:", DefaultLineOptions, false},
		{"pass", DefaultLineOptions, false},
		{"try:", DefaultLineOptions, false},
		{"finally:", DefaultLineOptions, false},
		{"return True", DefaultLineOptions, false},
		{"}", DefaultLineOptions, false},
		{"});", DefaultLineOptions, false},
		{"]]", DefaultLineOptions, false},
		{"\"\"\"", DefaultLineOptions, false},
		{"i+=1", DefaultLineOptions, false},               // shorter than 6
		{"x=0", LineOptions{MinChars: 1}, true},           // short lines kept when asked
		{"# compute the sum", DefaultLineOptions, false},  // comment
		{"// loop over items", DefaultLineOptions, false}, // comment
		{"import math", DefaultLineOptions, false},        // import dropped by default
		{"import math", LineOptions{MinChars: 6, KeepImports: true}, true},
		{"from typing import List", DefaultLineOptions, false},
		{"from_x=1+2", DefaultLineOptions, true}, // not an import
		{"return a+b", DefaultLineOptions, true},
		{"def add(a,b):", DefaultLineOptions, true},
		{"for i in range(n):", DefaultLineOptions, true},
		{"if __name__==\"__main__\":", DefaultLineOptions, false},
	}
	for _, c := range cases {
		if got := c.opts.Keep(c.line); got != c.want {
			t.Errorf("%+v.Keep(%q) = %v, want %v", c.opts, c.line, got, c.want)
		}
	}
}

func TestCodeLines(t *testing.T) {
	code := "import os\n\ndef add(a, b):\n    # sum\n    return a + b\n\nelse:\n}\n"
	got := DefaultLineOptions.CodeLines(code)
	want := []string{"def add(a,b):", "return a+b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CodeLines = %q, want %q", got, want)
	}
}

func TestFencedBlocks(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"none", "just prose\nno code", nil},
		{"one with tag", "Here:\n```python\nx = 1\ny = 2\n```\nDone.", []string{"x = 1\ny = 2"}},
		{"two", "```\na\n```\ntext\n~~~js\nb\n~~~", []string{"a", "b"}},
		{"longer closing fence", "````\na\n```\nb\n````", []string{"a\n```\nb"}},
		{"unclosed runs to end", "```py\nx = 1\n", []string{"x = 1\n"}},
		{"inline backticks are not a fence", "use ```x``` here\n", nil},
		{"indented fence", "  ```\n  code\n  ```", []string{"  code"}},
		{"tilde block holding backticks", "~~~\ns = `a`\n```\n~~~\nafter", []string{"s = `a`\n```"}},
		{"backtick block holding tildes", "```\nx = ~y\n~~~\n```", []string{"x = ~y\n~~~"}},
		{"closing line with text is not a fence", "```\na\n``` b\nc\n```", []string{"a\n``` b\nc"}},
		{"closing after a non-ASCII space", "```\na\n\u00a0```\nb", []string{"a"}},
		{"fence character mid-line", "x ~~~\n```\ny = 1 # ```\n```", []string{"y = 1 # ```"}},
		{"fence on the last line", "text\n```", nil},
	}
	for _, c := range cases {
		got := FencedBlocks(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: FencedBlocks = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDialogueCode(t *testing.T) {
	d := schema.Dialogue{Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Fix:\n```\nuser_code()\n```"},
		{Role: schema.RoleAssistant, Content: "Sure\n```python\nfixed()\n```", Exec: &schema.Execution{Code: "fixed()"}},
		{Role: schema.RoleExecution, Content: "```\noutput\n```", Exec: &schema.Execution{Code: "fixed()"}},
		{Role: schema.RoleAssistant, Content: "no fences here", Exec: &schema.Execution{Code: "ran()"}},
		{Role: schema.RoleSystem, Content: "```\nsystem_code()\n```"},
		{Role: schema.RoleUser, Content: "Here is mine, unfenced\ndef pasted():\n    return 1\nthanks"},
	}}
	got := DialogueCode(&d)
	want := []string{"user_code()", "fixed()", "ran()", "def pasted():\n    return 1\n"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DialogueCode = %q, want %q", got, want)
	}
}

// The one-pass line hashing of the check must give what hashing
// DialogueCode's blocks one by one gives: the same lines, windows and
// window starts.
func TestDialogueLines(t *testing.T) {
	ds := []schema.Dialogue{{Messages: []schema.Message{
		{Role: schema.RoleUser, Content: "Fix:\n```\nuser_code(1, 2)\nmore_code(3)\n```\n  ~~~\nin_tilde(4, 5)\nsecond(6, 7)\n  ~~~"},
		{Role: schema.RoleAssistant, Content: "no fences here", Exec: &schema.Execution{Code: "ran_it(1)\nran_again(2)"}},
		{Role: schema.RoleUser, Content: "Here is mine, unfenced\ndef pasted(x):\n    return x + 1\nthanks\n\u00a0```\nnot_a_fence(1)\nunclosed = [1, 2]"},
		{Role: schema.RoleAssistant, Content: "```\nunclosed_fence(1)\nto_the_end(2)"},
	}}}
	ds = append(ds, testDialogues(t, sharedtest.Path(t, "codefeedback-sample/code_feedback_sample.jsonl"))...)
	// Real and random texts (fences, tildes, blank and non-ASCII lines,
	// unclosed blocks) as turns, two to a dialogue.
	texts := scanTexts(t)
	for i := 0; i+1 < len(texts); i += 2 {
		ds = append(ds, schema.Dialogue{Messages: []schema.Message{{Role: schema.RoleUser, Content: texts[i]}, {Role: schema.RoleAssistant, Content: "```\n" + texts[i+1]}}},
			schema.Dialogue{Messages: []schema.Message{{Role: schema.RoleAssistant, Content: texts[i] + "\n~~~\n" + texts[i+1] + "\n~~~~\nx = 1\n"}}})
	}
	o := DefaultLineOptions
	s := newScratch()
	for _, d := range ds {
		var lh, wh []uint64
		var starts []int
		for _, block := range DialogueCode(&d) {
			first := len(lh)
			lh, _ = o.codeLineHashes(block, nil, lh)
			before := len(wh)
			wh = rollingHashes(lh[first:], 2, wh)
			for i := before; i < len(wh); i++ {
				starts = append(starts, first+i-before)
			}
		}
		o.dialogueLines(&d, 2, s)
		if len(lh) == 0 && len(s.lh) == 0 {
			continue
		}
		if !slices.Equal(lh, s.lh) || !slices.Equal(wh, s.wh) || !slices.Equal(starts, s.blockStart) {
			t.Errorf("dialogue %q: dialogueLines gives %d lines, %d windows; DialogueCode %d, %d", d.ID, len(s.lh), len(s.wh), len(lh), len(wh))
		}
	}
}

func TestTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"sum(a,b)", []string{"sum", "a", "b"}},
		{"Sum (A, B) == 3.5", []string{"sum", "a", "b", "3", "5"}},
		{"snake_case_name", []string{"snake_case_name"}},
		{"Ünïcode Wörd!", []string{"ünïcode", "wörd"}},
		{"   ", []string{}},
	}
	for _, c := range cases {
		if got := Tokens(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestRollingHashesMatchDirect(t *testing.T) {
	hs := []uint64{11, 22, 33, 44, 55, 66}
	got := rollingHashes(hs, 3, nil)
	if len(got) != 4 {
		t.Fatalf("got %d windows, want 4", len(got))
	}
	for i := range got {
		direct := rollingHashes(hs[i:i+3], 3, nil)[0]
		if got[i] != direct {
			t.Errorf("window %d: rolling %x, direct %x", i, got[i], direct)
		}
	}
	if rollingHashes(hs[:2], 3, nil) != nil {
		t.Errorf("short input gave windows, want none")
	}
	// Case and punctuation do not change an n-gram's hash.
	a := rollingHashes(tokenHashes(tokenize("Write a Function, to ADD", nil), nil), 3, nil)
	b := rollingHashes(tokenHashes(tokenize("write a function to add", nil), nil), 3, nil)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("hashes differ by case/punctuation: %x vs %x", a, b)
	}
}

// TestKeyFilter checks the filter holds every key of the indexes and lets
// few absent keys through.
func TestKeyFilter(t *testing.T) {
	a := testAuditor(t, Options{})
	keys := 0
	for _, x := range a.indexes {
		check := func(h uint64) {
			keys++
			if !a.filter.mayHold(h) {
				t.Fatalf("key %x of %s not in the filter", h, x.name)
			}
		}
		x.windows.each(check)
		x.grams.each(check)
		x.fpIndex.each(check)
	}
	pass := 0
	const n = 1 << 16
	for i := uint64(1); i <= n; i++ {
		if a.filter.mayHold(fmix64(i * 0x9E3779B97F4A7C15)) {
			pass++
		}
	}
	t.Logf("%d keys in %d KiB; %.2f%% of random absent hashes pass", keys, len(a.filter.words)*8/1024, 100*float64(pass)/n)
	if pass > n/20 {
		t.Errorf("%d of %d absent hashes pass the filter, want <= 5%%", pass, n)
	}
}

// TestHashTable checks the flat table against a map, zero key included.
func TestHashTable(t *testing.T) {
	want := map[uint64]int32{0: 7}
	for i := uint64(1); i < 5000; i++ {
		want[fmix64(i)&^0xFF] = int32(i) // low bits alike: the table must spread by the top bits
	}
	tab, vals := freeze(want)
	if tab.Len() != len(want) {
		t.Fatalf("Len %d, want %d", tab.Len(), len(want))
	}
	for k, v := range want {
		if i, ok := tab.get(k); !ok || vals[i] != v {
			t.Fatalf("get(%x) = %v %v, want %d", k, i, ok, v)
		}
	}
	for i := uint64(1); i < 5000; i++ {
		if _, ok := tab.get(fmix64(i) | 1); ok && want[fmix64(i)|1] == 0 {
			t.Fatalf("get(%x) found an absent key", fmix64(i)|1)
		}
	}
}

// TestLineHashMatchesCodeLines holds the hashed lines of a block
// (codeLineHashes, which passes over comment lines without normalising
// them) to CodeLines, the normalised lines Keep accepts, hashed.
func TestLineHashMatchesCodeLines(t *testing.T) {
	texts := append(scanTexts(t),
		"    # a comment line\nx = 1  # trailing\n\t* a star line\n  *ptr = value;\n\u00a0# after a no-break space\n\u2003* after an em space\n",
		"#include <stdio.h>\n   #   \n** kwargs\n\v\f# form feed\n \\\n# continued\nprint(1) \\\n  # not a comment\n",
	)
	for _, o := range []LineOptions{DefaultLineOptions, {MinChars: 1, KeepImports: true}, {}} {
		for _, text := range texts {
			var want []uint64
			for _, l := range o.CodeLines(text) {
				want = append(want, hashString(l))
			}
			got, _ := o.codeLineHashes(text, nil, nil)
			if !slices.Equal(got, want) {
				t.Fatalf("%+v: codeLineHashes(%q) gives %d lines, CodeLines %d", o, text, len(got), len(want))
			}
		}
	}
}
