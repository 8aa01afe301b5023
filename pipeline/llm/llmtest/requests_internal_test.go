package llmtest

import (
	"strconv"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/gates"
	openai "github.com/sashabaranov/go-openai"
)

const pairCode = "def find_even_Pair(A,N): \n    evenPair = 0\n    for i in range(0,N): \n        for j in range(i+1,N): \n            if ((A[i] ^ A[j]) % 2 == 0): \n                evenPair+=1\n    return evenPair; \n\nprint(find_even_Pair([5,4,7,2,1],5))"

// TestCompanionAnswer: the companion is defined before the example's
// print and called on the example's arguments, so a closing may name it.
func TestCompanionAnswer(t *testing.T) {
	got := lastCode(companionAnswer(pairCode, "", "`find_even_Pair`", "find_even_Pair", false))
	want := "    return evenPair; \n\n\ndef find_even_Pair_all(cases):\n    \"\"\"Apply find_even_Pair to each tuple of arguments in cases, in order.\"\"\"\n    return [find_even_Pair(*args) for args in cases]\n\n\nprint(find_even_Pair([5,4,7,2,1],5))\nprint(find_even_Pair_all([([5,4,7,2,1],5,)]))"
	if !strings.Contains(got, want) {
		t.Errorf("code\n%s\nlacks\n%s", got, want)
	}
	if !gates.Reached(got)["find_even_Pair_all"] {
		t.Errorf("the run of\n%s\ndoes not call find_even_Pair_all", got)
	}
	if s := gates.UncalledClaim("The output confirms that `find_even_Pair_all` handles the request correctly.", lastCode(companionAnswer(pairCode, "", "`find_even_Pair`", "find_even_Pair", true))); s == "" {
		t.Errorf("the misbehaving companion passes the uncalled-claim check")
	}
	// no example to call it on: the answer says the run does not call it
	if a := companionAnswer("def f(x):\n    return x", "assert f(3) == 3", "`f`", "f", false); !strings.Contains(lastCode(a), "print(f_all([(3,)]))") {
		t.Errorf("code that only defines f, with the task's assert: %q, want f_all called on the assert's arguments", a)
	}
	if a := companionAnswer("def f(x):\n    return x", "", "`f`", "f", false); !strings.Contains(a, "does not call `f_all`") {
		t.Errorf("answer without an example: %q", a)
	}
}

func TestGuardAnswer(t *testing.T) {
	for _, tc := range []struct {
		name, code, examples, fn string
		checks                   []string
		ok                       bool
	}{
		{"the example's types", pairCode, "", "find_even_Pair", []string{"if not isinstance(A, list):", "if not isinstance(N, int):"}, true},
		{"the function the request names", lastCode(companionAnswer(pairCode, "", "`find_even_Pair`", "find_even_Pair", false)), "", "find_even_Pair_all",
			[]string{"def find_even_Pair_all(cases):\n    \"\"\"Apply find_even_Pair to each tuple of arguments in cases, in order.\"\"\"\n    if not isinstance(cases, list):"}, true},
		{"from the task's asserts", "def f(s, k):\n    return s[:k]", "assert f('abc', 2.5) == 'ab'", "f", []string{"if not isinstance(s, str):", "if not isinstance(k, (int, float)):"}, true},
		{"a tuple and a dict", "def g(t, d):\n    return d[t[0]]", "assert g((1, 2), {1: 'a'}) == 'a'", "g", []string{"isinstance(t, tuple)", "isinstance(d, dict)"}, true},
		{"no example", "def f(x):\n    return x", "", "f", nil, false},
		{"an argument named after its type", "def rot(str):\n    return str[1:] + str[:1]", "assert rot(\"ab\") == \"ba\"", "rot", []string{`if not isinstance(str, type("")):`}, true},
		{"an uncalled companion", lastCode(companionAnswer("def f(x):\n    return x", "", "`f`", "f", true)), "", "f_all", []string{"if not isinstance(cases, (list, tuple)):"}, true},
	} {
		a, ok := guardAnswer(tc.code, tc.examples, "`"+tc.fn+"`", tc.fn)
		if ok != tc.ok {
			t.Errorf("%s: ok %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		code := lastCode(a)
		for _, c := range tc.checks {
			if !strings.Contains(code, c) {
				t.Errorf("%s: code\n%s\nlacks %q", tc.name, code, c)
			}
		}
		if ok && gates.UncheckedInputs(tc.code, code, "guard "+tc.fn+" against inputs of the wrong type") {
			t.Errorf("%s: the product's check finds no input check in\n%s", tc.name, code)
		}
	}
}

func TestStoreRepeated(t *testing.T) {
	const lenLog = "def len_log(list1):\n    max=len(list1[0])\n    for i in list1:\n        if len(i)>max:\n            max=len(i)\n    return max\n\nprint(len_log([\"python\",\"PHP\",\"bigdata\"]))"
	for _, tc := range []struct {
		name, code, fn, want string
	}{
		{"condition and assignment", lenLog, "len_log",
			"    for i in list1:\n        len_i = len(i)\n        if len_i>max:\n            max=len_i\n    return max"},
		{"both branches", "def f(xs):\n    out = 0\n    for x in xs:\n        if x > 0:\n            out += abs(x)\n        else:\n            out -= abs(x)\n    return out",
			"f", "    for x in xs:\n        abs_x = abs(x)\n        if x > 0:\n            out += abs_x\n        else:\n            out -= abs_x\n"},
		{"a while condition", "def f(xs, n):\n    while len(xs) > n:\n        n += len(xs)\n    return n", "f", ""},
		{"nothing repeated", "def f(xs):\n    for x in xs:\n        y = abs(x)\n    return y", "f", ""},
	} {
		out, _, _, ok := storeRepeated(tc.code, tc.fn)
		if ok != (tc.want != "") || ok && !strings.Contains(out, tc.want) {
			t.Errorf("%s: ok %v, code\n%s\nwant it to hold\n%s", tc.name, ok, out, tc.want)
		}
		if ok && gates.RepeatedCall(out) != "" {
			t.Errorf("%s: still repeats %s:\n%s", tc.name, gates.RepeatedCall(out), out)
		}
	}
	// kept for a while condition, without the claim the gate refuses
	text, _ := keepAnswer("avoid recomputing values inside f", "def f(xs, n):\n    while len(xs) > n:\n        n += len(xs)\n    return n", "`f`", "f", false)
	if s := gates.FalseComputedOnce(text, lastCode(text)); s != "" || !strings.Contains(text, "`len(xs)`") {
		t.Errorf("kept answer %q", text)
	}
}

func TestPlanMatchesCode(t *testing.T) {
	for _, tc := range []struct {
		code string
		want int
	}{
		{"def t(n):\n    return n * (n + 1) * (n + 2) / 6", 0},
		{"def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total", 2},
		{"def f(a, b):\n    a, b = b, a\n    return a == b", 1},
	} {
		if got := namedSteps(tc.code, strings.TrimPrefix(tc.code[:strings.Index(tc.code, "(")], "def ")); got != tc.want {
			t.Errorf("namedSteps(%q) = %d, want %d", tc.code, got, tc.want)
		}
	}
}

func TestEdgeTest(t *testing.T) {
	const counter = "def count(xs, k):\n    n = 0\n    for x in xs:\n        if x == k:\n            n += 1\n    return n\n\nprint(count([1, 2, 1], 1))"
	for _, tc := range []struct {
		name, code, examples, fn string
		want                     []string
	}{
		{"a counter set before the loop", counter, "", "count", []string{"assert count([], 1) == 0"}},
		{"an explicit raise", "def first(s):\n    if len(s) == 0:\n        raise ValueError(\"s must not be empty\")\n    return s[0]", "assert first('ab') == 'a'", "first",
			[]string{"try:", "    first('')", "except ValueError:", "    pass", "else:", "    raise AssertionError(\"first('') should raise ValueError\")"}},
		{"an explicit return", "def best(xs):\n    if len(xs) == 0:\n        return None\n    return max(xs)", "assert best((3, 1)) == 3", "best", []string{"assert best(()) is None"}},
		{"a loop over an index, not the list", pairCode, "", "find_even_Pair", nil},
		{"a list in parentheses", "def total(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t", "assert total(([1, 2]))==3", "total", []string{"assert total([]) == 0"}},
		{"no example", "def count(xs):\n    n = 0\n    for x in xs:\n        n += 1\n    return n", "", "count", nil},
	} {
		got, why, ok := edgeTest(tc.code, tc.examples, tc.fn)
		if ok != (tc.want != nil) || strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: edgeTest = %q, %v, want %q", tc.name, got, ok, tc.want)
		}
		if ok && why == "" {
			t.Errorf("%s: no reason given", tc.name)
		}
	}
}

// TestJudgeAcceptsOwnChanges: the persona's judge takes its own type
// guard and stored call for the code they revise.
func TestJudgeAcceptsOwnChanges(t *testing.T) {
	const lenLog = "def len_log(list1):\n    max=len(list1[0])\n    for i in list1:\n        if len(i)>max:\n            max=len(i)\n    return max"
	const task = "Write a python function to find the length of the longest word."
	p := &Persona{Solve: func(string) (string, string, bool) { return lenLog, "", true }}
	demo := lenLog + "\n\nprint(len_log([\"python\",\"PHP\",\"bigdata\"]))"
	guarded, _ := guardAnswer(demo, "", "`len_log`", "len_log")
	stored, _ := keepAnswer("avoid recomputing values inside f", demo, "`len_log`", "len_log", false)
	shadowing, _ := guardAnswer("def len_log(list):\n    max=len(list[0])\n    for i in list:\n        if len(i)>max:\n            max=len(i)\n    return max\n\nprint(len_log([\"a\"]))", "", "`len_log`", "len_log")
	if !strings.Contains(lastCode(shadowing), "isinstance(list, type([]))") || personaTypesRe.ReplaceAllString(lastCode(shadowing), "") == lastCode(shadowing) {
		t.Errorf("the judge does not strip the guard of\n%s", lastCode(shadowing))
	}
	for name, code := range map[string]string{"guard": lastCode(guarded), "stored": lastCode(stored), "wrong": strings.Replace(demo, ">max", "<max", 1)} {
		c := Call{Request: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "Task:\n" + task + "\n\nCode:\n```python\n" + code + "\n```\n\nOutput:\n7"}}}}
		got := strings.Contains(p.judge(c), `"correct":true`)
		if got != (name != "wrong") {
			t.Errorf("%s: judge says correct=%v of\n%s", name, got, code)
		}
	}
}

func TestLiteralType(t *testing.T) {
	for lit, want := range map[string]string{"[1, 2]": "list", "([1, 2])": "list", "(1, 2)": "tuple", "()": "tuple", "(1,)": "tuple", "'ab'": "str", "{1: 2}": "dict", "{1, 2}": "set", "{}": "dict", "3": "int", "-2.5": "float", "True": "bool", "x": ""} {
		if got := literalType(lit); got != want {
			t.Errorf("literalType(%q) = %q, want %q", lit, got, want)
		}
	}
}

// TestCompanionClosing: the closing after a companion round says what the
// run showed of each function, and names none it did not call.
func TestCompanionClosing(t *testing.T) {
	p := &Persona{}
	called := lastCode(companionAnswer(pairCode, "", "`find_even_Pair`", "find_even_Pair", false))
	uncalled := lastCode(companionAnswer(pairCode, "", "`find_even_Pair`", "find_even_Pair", true))
	for _, tc := range []struct {
		name, code, says string
	}{
		{"called", called, "`find_even_Pair_all`, called on a list holding the example's arguments"},
		{"not called", uncalled, "`find_even_Pair`"},
	} {
		got := p.closing("The run above is accepted.", tc.code, "task", Call{})
		if !strings.Contains(got, tc.says) {
			t.Errorf("%s: closing %q lacks %q", tc.name, got, tc.says)
		}
		if s := gates.UncalledClaim(got, tc.code); s != "" {
			t.Errorf("%s: closing claims an uncalled function: %q", tc.name, s)
		}
	}
}

// TestPlanSaysWhatTheCodeDoes: every phrasing of a first answer's plan
// speaks of the code's own lines: no named intermediate values over a
// one-line return, no steps the code does not take.
func TestPlanSaysWhatTheCodeDoes(t *testing.T) {
	const oneLine = "def tetrahedral_number(n):\n    return (n * (n + 1) * (n + 2)) / 6"
	p := &Persona{Solve: func(string) (string, string, bool) { return oneLine, "", true }}
	seen := map[string]bool{}
	for i := range 40 {
		c := Call{Request: openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You write code."}, {Role: "user", Content: "Write a function to find the nth tetrahedral number. " + strconv.Itoa(i*37)}}}}
		got := p.writer(c)
		plan := got[:strings.Index(got, "```")]
		seen[plan] = true
		for _, hollow := range []string{"intermediate value", "step by step", "general case", "small steps"} {
			if strings.Contains(plan, hollow) {
				t.Errorf("plan %q says %q of a one-line return", plan, hollow)
			}
		}
	}
	if len(seen) < 3 {
		t.Errorf("%d phrasings, want several: %v", len(seen), seen)
	}
}
