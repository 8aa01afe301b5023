package gates

import (
	"slices"
	"strings"
	"testing"
)

func TestPreface(t *testing.T) {
	code := "def count_vowels(text):\n    total = 0\n    for ch in text:\n        total += ch in 'aeiou'\n    return total\n"
	tests := []struct {
		name, text, want string
	}{
		{"explains", "The function `count_vowels` walks over the text once and adds one to `total` for every vowel it meets.", ""},
		{"names by words", "It counts the vowels of the string in one pass and returns how many it found.", ""},
		{"transition", "Good point. Here's the updated code:", "transition"},
		{"thanks", "Thanks for the feedback. Here is a revised version:", "transition"},
		{"you're right", "You're right, the loop in count_vowels was wrong and this fixes it properly.", "transition"},
		{"here is", "Here is the function that counts vowels in a string, step by step.", "transition"},
		{"fenced code", "It counts vowels:\n```python\nprint(count_vowels('abc'))\n```", "code"},
		{"bare code", "def count_vowels(text):\n    return sum(c in 'aeiou' for c in text)", "code"},
		{"too short", "Counts vowels.", "too_short"},
		{"unrelated", "This answer is well structured and easy to follow for any reader of it.", "unrelated"},
	}
	for _, tc := range tests {
		if got := Preface(tc.text, code, 20); got.Reason != tc.want {
			t.Errorf("%s: Preface(%q) = %q, want %q", tc.name, tc.text, got.Reason, tc.want)
		}
	}
}

func TestHasCode(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"Please add a docstring to `add` that says what it returns.", false},
		{"Could you check that both arguments are numbers? Right now add('a', 1) raises.", false},
		{"Like this:\n```python\ndef add(a, b):\n    return a + b\n```", true},
		{"Change it to:\ndef add(a, b):\n    return a + b", true},
		{"Use this:\n    result = a + b\n    return result", true},
		{"x = 1 is a fine default but the function should also accept None as the value here.", false},
		{"SELECT name FROM users WHERE id = 1;\nSELECT 1 FROM t;", true},
	}
	for _, tc := range tests {
		if got := HasCode(tc.text); got != tc.want {
			t.Errorf("HasCode(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

func TestSameCodeAndRevision(t *testing.T) {
	a := "def f(x):\n    # double it\n    return x * 2\n"
	tests := []struct {
		b    string
		same bool
	}{
		{"def f(x):\n    return x * 2", true},
		{"def f(x):  \n\n    return x * 2  # twice\n", true},
		{"def f(x):\n    \"\"\"Double x.\"\"\"\n    return x * 2\n", false},
		{"def f(x):\n    return x + x\n", false},
		{"def f(x):\n    s = '#'\n    return x * 2\n", false},
	}
	for _, tc := range tests {
		if got := SameCode(a, tc.b); got != tc.same {
			t.Errorf("SameCode(%q, %q) = %v, want %v", a, tc.b, got, tc.same)
		}
	}
	for text, want := range map[string]bool{
		"The code already handles empty lists, so no change is needed.": true,
		"You're right. The solution is correct.":                        false,
		"I kept the code unchanged because the check is already there.": true,
	} {
		if got := ExplainsNoChange(text); got != want {
			t.Errorf("ExplainsNoChange(%q) = %v, want %v", text, got, want)
		}
	}
	for text, want := range map[string]bool{
		"Looks good to me.":                          false,
		"Looks good, but could you add a docstring?": true,
		"Please validate the input.":                 true,
	} {
		if got := AsksForChange(text); got != want {
			t.Errorf("AsksForChange(%q) = %v, want %v", text, got, want)
		}
	}
}

type stats map[string]float64

func (s stats) Add(k string, v float64) { s[k] += v }

func TestFail(t *testing.T) {
	s := stats{}
	for i := range 10 {
		v := Verdict{}
		if i < 3 {
			v = Verdict{Reason: "code"}
		}
		Record(s, "preface", v)
		Record(s, "other", Verdict{})
	}
	samples := &Samples{}
	samples.Add("preface", "dlg-1: Good point. Here's the updated code:")
	if err := Fail("explain", s, 0.5, samples); err != nil {
		t.Errorf("30%% rejected under a 50%% limit: got %v, want nil", err)
	}
	err := Fail("explain", s, 0.2, samples)
	if err == nil {
		t.Fatal("30% rejected over a 20% limit: got nil, want an error")
	}
	for _, want := range []string{"gate preface rejected 3 of 10", "30%", "code 3", "dlg-1: Good point"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "other") {
		t.Errorf("error %q names a gate that passed", err)
	}
	if err := Fail("explain", s, 1, samples); err != nil {
		t.Errorf("limit 1 never fails: got %v", err)
	}
}

func TestSameLogic(t *testing.T) {
	const base = "def f(xs):\n    return sorted(xs)\n"
	for _, tc := range []struct {
		name string
		b    string
		want bool
	}{
		{"identical", base, true},
		{"comment added", "def f(xs):\n    # sort them\n    return sorted(xs)\n", true},
		{"one-line docstring", "def f(xs):\n    \"\"\"Sorts xs.\"\"\"\n    return sorted(xs)\n", true},
		{"multi-line docstring", "def f(xs):\n    '''Sorts xs.\n\n    Faster now.\n    '''\n    return sorted(xs)\n", true},
		{"raw docstring", "def f(xs):\n    r\"\"\"Sorts \\d.\"\"\"\n    return sorted(xs)\n", true},
		{"string statement as comment", "def f(xs):\n    'tally first'\n    return sorted(xs)\n", true},
		{"logic changed", "def f(xs):\n    return sorted(xs, reverse=True)\n", false},
		{"string assigned is code", "def f(xs):\n    s = \"\"\"x\"\"\"\n    return sorted(xs)\n", false},
		{"string expression continues", "def f(xs):\n    \"a\" + print(1)\n    return sorted(xs)\n", false},
	} {
		if got := SameLogic(base, tc.b); got != tc.want {
			t.Errorf("%s: SameLogic = %v, want %v\n%s", tc.name, got, tc.want, StripDocstrings(tc.b))
		}
	}
}

func TestUndocumentedParams(t *testing.T) {
	const vague = "def find_Volume(l,b,h) : \n    \"\"\"Return the task's result; the arguments are left unmodified.\"\"\"\n    return ((l * b * h) / 2)\n"
	const named = "def find_Volume(l, b, h: float = 1) -> float:\n    \"\"\"Volume of a triangular prism.\n\n    Args:\n        l: length of the base triangle (float).\n        b: its breadth (float).\n        h: height of the prism (float).\n    \"\"\"\n    return (l * b * h) / 2\n"
	const two = "def helper(xs):\n    return xs\n\ndef main(data, *rest, **opts):\n    # data: the rows; rest, opts: passed on\n    return helper(data)\n"
	for _, tc := range []struct {
		name, code, request string
		want                string
	}{
		{"vague docstring", vague, "document the arguments of `find_Volume` and their types", "l,b,h"},
		{"every argument named", named, "document the arguments of `find_Volume`", ""},
		{"comments count, stars and defaults stripped", two, "describe the parameters of `main`", ""},
		{"the quoted function, not the last", two, "please document the arguments of `helper()`", "xs"},
		{"no function", "print(1)\n", "document the arguments", ""},
		{"methods skip self", "class A:\n    def f(self, n):\n        \"\"\"n: how many.\"\"\"\n        return n\n", "document the params of `f`", ""},
	} {
		if got := strings.Join(UndocumentedParams(tc.code, tc.request), ","); got != tc.want {
			t.Errorf("%s: UndocumentedParams = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestDocText(t *testing.T) {
	code := "def f(x):\n    '''Doubles x.\n    Returns an int.'''\n    y = '# not a comment'  # real comment\n    return 2 * x\n"
	want := "    '''Doubles x.\n    Returns an int.'''\n real comment"
	if got := DocText(code); got != want {
		t.Errorf("DocText = %q, want %q", got, want)
	}
}

func TestBehaviourTests(t *testing.T) {
	const before = "def add(a, b):\n    return a + b\n\nassert add(1, 2) == 3\n"
	for _, tc := range []struct {
		name, after string
		want        int
	}{
		{"callable only", before + "assert callable(add)\nprint('tests passed')\n", 0},
		{"old assert kept, none new", before + "print(add(2, 2))\n", 0},
		{"two new calls", before + "assert add(-2, -3) == -5\nassert add(0, 0) == 0\n", 2},
		{"unittest", before + "import unittest\nclass T(unittest.TestCase):\n    def test_neg(self):\n        self.assertEqual(add(-1, -1), -2)\n", 1},
		{"call without arguments", "def now():\n    return 1\n\nassert now() == 1\n", 0},
		{"test helper not the subject", "def add(a, b):\n    return a + b\n\ndef test_add(x):\n    assert test_add(x)\n", 0},
	} {
		if got := BehaviourTests(before, tc.after); got != tc.want {
			t.Errorf("%s: BehaviourTests = %d, want %d", tc.name, got, tc.want)
		}
	}
	// MBPP names some functions test_*: the code under test is what the
	// answer before defined.
	const mbpp = "def test_distinct(data):\n    return len(data) == len(set(data))\n"
	for _, tc := range []struct {
		name, before, after string
		want                int
	}{
		{"test_* under test", mbpp, mbpp + "assert test_distinct([1, 5, 7]) == True\nassert callable(test_distinct)\n", 1},
		{"nothing before", "", mbpp + "assert test_distinct([1, 1]) == False\n", 0},
		{"nothing before, subject not test_*", "", "def add(a, b):\n    return a + b\nassert add(1, 1) == 2\n", 1},
	} {
		if got := BehaviourTests(tc.before, tc.after); got != tc.want {
			t.Errorf("%s: BehaviourTests = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestUncheckedInputs(t *testing.T) {
	const plain = "def area(w, h):\n    return w * h\n"
	const docOnly = "def area(w, h):\n    \"\"\"Return the area; inputs are already validated.\"\"\"\n    return w * h\n"
	const raises = "def area(w, h):\n    if w < 0 or h < 0:\n        raise ValueError(\"negative side\")\n    return w * h\n"
	const types = "def area(w, h):\n    \"\"\"Area.\"\"\"\n    if not isinstance(w, (int, float)):\n        raise TypeError('w')\n    return w * h\n"
	const guard = "def area(w, h):\n    if w is None or h is None: return 0\n    return w * h\n"
	const recursive = "def fact(n):\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n"
	const recursiveDoc = "def fact(n):\n    \"\"\"n! ; n is already checked.\"\"\"\n    if n <= 1:\n        return 1\n    return n * fact(n - 1)\n"
	const validate = "Please validate the arguments `area` receives before using them."
	for _, tc := range []struct {
		name, before, after, request string
		want                         bool
	}{
		{"docstring and a claim over code that checks nothing", plain, docOnly, validate, true},
		{"unchanged code that checks nothing", plain, plain, "guard `area` against inputs of the wrong type", true},
		{"a raise added", plain, raises, validate, false},
		{"an isinstance added", plain, types, "Could it raise a TypeError on bad input?", false},
		{"a guard clause added", plain, guard, validate, false},
		{"an except added", plain, "def area(w, h):\n    try:\n        return w * h\n    except TypeError:\n        return None\n", "It raises an exception on strings; guard against that.", false},
		{"already checks, docstring added", raises, "def area(w, h):\n    \"\"\"Area; negative sides raise.\"\"\"\n    if w < 0 or h < 0:\n        raise ValueError(\"negative side\")\n    return w * h\n", validate, false},
		{"a base case is no validation", recursive, recursiveDoc, "validate n before using it", true},
		{"not asked", plain, docOnly, "Please add a docstring.", false},
		{"asserts in tests at top level do not count", plain, plain + "\nassert area(2, 3) == 6\n", validate, true},
	} {
		if got := UncheckedInputs(tc.before, tc.after, tc.request); got != tc.want {
			t.Errorf("%s: UncheckedInputs = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRequestKinds: what the request classifiers read a request as
// asking for. Every request goes to every classifier, so a request of one
// kind is not also read as another.
func TestRequestKinds(t *testing.T) {
	kinds := map[string]func(string) bool{
		"params":   AsksToDocumentParams,
		"docs":     AsksForDocs,
		"validate": AsksToValidate,
		"empty":    AsksAboutEmpty,
		"explicit": AsksForExplicitEmpty,
		"speed":    AsksForSpeed,
		"memory":   AsksForLessMemory,
	}
	for _, tc := range []struct{ request, asks string }{
		{"It passes, though I want you to document the arguments of `find_Volume` and their types.", "params docs"},
		{"Could you add a docstring that describes each parameter?", "params docs"},
		{"Please document the arguments of `f` and their types.", "params docs"},
		{"Could you add a docstring to `f` that says what it returns?", "docs"},
		{"Could you explain in comments how `f` works and why?", "docs"},
		{"Could you explain in comments or a docstring how `f` works and why?", "docs"},
		{"Add type hints to `f`.", "docs"},
		{"Please validate the arguments `f` receives before using them.", "validate"},
		{"guard `f` against inputs of the wrong type", "validate"},
		{"What happens on invalid input? It should raise a ValueError.", "validate"},
		{"Check that the input is a non-empty list.", "validate"},
		{"How does `f` handle unusual inputs such as empty ones? Please make that behaviour explicit.", "empty explicit"},
		{"The code works, but please make `f` handle an empty input explicitly.", "empty explicit"},
		{"What happens when the list is empty?", "empty"},
		{"Handle edge cases too.", "empty"},
		// A test of an edge case is asked for, not a change of behaviour.
		{"Please add a few tests for `f`, including an edge case, that run together with it.", ""},
		{"Add tests with an empty list.", ""},
		{"Please handle negative numbers.", ""},
		{"Make `f` faster on large inputs.", "speed"},
		{"Could you make sure `add` still works quickly on much larger inputs?", "speed"},
		{"Could you keep the memory `f` uses small for long inputs?", "memory"},
		{"Can you make `f` faster or lighter on memory for very large inputs, keeping the same results?", "speed memory"},
		{"It passes, though I want you to use a clearer layout for the condition in `f`.", ""},
		{"Avoid features in `f` that older Python versions lack, please.", ""},
		{"Could you avoid recomputing values inside `describe_all`?", ""}, // a name is not a request
	} {
		asks := strings.Fields(tc.asks)
		for _, k := range asks {
			if kinds[k] == nil {
				t.Fatalf("%q: no kind %q", tc.request, k)
			}
		}
		for k, f := range kinds {
			if got, want := f(tc.request), slices.Contains(asks, k); got != want {
				t.Errorf("%q asks for %s: got %v, want %v", tc.request, k, got, want)
			}
		}
	}
}
