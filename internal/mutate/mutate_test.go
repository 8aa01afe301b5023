package mutate

import (
	"context"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestOperatorTableMatchesScript keeps the Go operator table and the
// script's OPERATORS table in step.
func TestOperatorTableMatchesScript(t *testing.T) {
	re := regexp.MustCompile(`(?m)^    "(\w+)": \("(\w+)", \w+\),$`)
	got := map[string]Kind{}
	for _, m := range re.FindAllStringSubmatch(Script(), -1) {
		got[m[1]] = Kind(m[2])
	}
	if !reflect.DeepEqual(got, operators) {
		t.Fatalf("script operators %v, want the Go table %v", got, operators)
	}
	for _, k := range Kinds() {
		if len(Operators(k)) == 0 {
			t.Errorf("kind %s has no operator", k)
		}
	}
}

// TestMutationOperators runs each operator in the sandbox on a small function
// and checks that a specific expected mutant is among its outputs.
func TestMutationOperators(t *testing.T) {
	m := &Mutator{Exec: sandbox(t), PerOperator: 100}
	loop := "def count(n):\n    i = 0\n    while i < n:\n        i += 1\n    return i\n"
	loop2 := "def total(n):\n    i = 0\n    t = 0\n    while i < n:\n        t += i\n        i += 1\n    return t\n"
	cases := []struct {
		op, src, want string
		line          int
	}{
		{"syntax_drop_colon", "def f(x):\n    return x\n", "def f(x)\n    return x\n", 1},
		{"syntax_drop_bracket", "def f(x):\n    return max(x)\n", "def f(x):\n    return max(x\n", 2},
		{"syntax_bad_indent", "def f(x):\n    y = x\n    return y\n", "def f(x):\n    y = x\n      return y\n", 3},
		{"syntax_bad_indent", "def f(x):\n    y = x\n    return y\n", "def f(x):\n    y = x\n   return y\n", 3},
		{"name_misspell", "def f(total):\n    return total * 2\n", "def f(total):\n    return ttoal * 2\n", 2},
		{"name_misspell", "def f(n):\n    return n * 2\n", "def f(n):\n    return n1 * 2\n", 2},
		{"name_rename_param", "def f(nums):\n    return sum(nums)\n", "def f(num):\n    return sum(nums)\n", 1},
		{"type_str_wrap", "def f(a, b):\n    return a + b\n", "def f(a, b):\n    return str(a) + b\n", 2},
		{"type_num_to_str", "def f(a):\n    return a + 1\n", "def f(a):\n    return a + '1'\n", 2},
		{"type_drop_conversion", "def f(xs):\n    return range(len(xs))\n", "def f(xs):\n    return range(xs)\n", 2},
		{"logic_compare_swap", "def f(a, b):\n    return a < b\n", "def f(a, b):\n    return a <= b\n", 2},
		{"logic_compare_swap", "def f(a, b):\n    return a not in b\n", "def f(a, b):\n    return a in b\n", 2},
		{"logic_arith_swap", "def f(a, b):\n    return a - b * 2\n", "def f(a, b):\n    return a + b * 2\n", 2},
		{"logic_arith_swap", "def f(a, b):\n    return a - b * 2\n", "def f(a, b):\n    return a - b // 2\n", 2},
		{"logic_off_by_one_range", "def f(n):\n    return list(range(1, n + 1))\n", "def f(n):\n    return list(range(1, n))\n", 2},
		{"logic_off_by_one_range", "def f(n):\n    return list(range(n))\n", "def f(n):\n    return list(range(n - 1))\n", 2},
		{"logic_off_by_one_index", "def f(xs):\n    return xs[-1]\n", "def f(xs):\n    return xs[-2]\n", 2},
		{"logic_off_by_one_index", "def f(xs, i):\n    return xs[i]\n", "def f(xs, i):\n    return xs[i + 1]\n", 2},
		{"logic_drop_return", "def f(x):\n    return x * 2\n", "def f(x):\n    x * 2\n", 2},
		{"logic_bool_flip", "def f(a, b):\n    return a and b\n", "def f(a, b):\n    return a or b\n", 2},
		{"logic_bool_flip", "def f(a):\n    return not a\n", "def f(a):\n    return a\n", 2},
		{"logic_bool_flip", "def f(a):\n    ok = True\n    return ok\n", "def f(a):\n    ok = False\n    return ok\n", 2},
		// the step's line goes (no telltale `pass`); a body of the step
		// alone would need a `pass`, so it is no site
		{"timeout_drop_increment", loop2, strings.Replace(loop2, "        i += 1\n", "", 1), 6},
		{"timeout_reverse_step", loop, strings.Replace(loop, "i += 1", "i -= 1", 1), 4},
		{"timeout_while_true", loop, strings.Replace(loop, "while i < n", "while True", 1), 3},
	}
	for _, tc := range cases {
		t.Run(tc.op, func(t *testing.T) {
			ms, err := m.Mutate(context.Background(), tc.src, 1, []string{tc.op})
			if err != nil {
				t.Fatal(err)
			}
			var codes []string
			for _, mu := range ms {
				if mu.Operator != tc.op || mu.Kind != operators[tc.op] {
					t.Errorf("mutant operator/kind %s/%s, want %s/%s", mu.Operator, mu.Kind, tc.op, operators[tc.op])
				}
				if mu.Code == tc.src {
					t.Errorf("mutant equals the source")
				}
				if mu.Code == tc.want {
					if mu.Line != tc.line {
						t.Errorf("mutant line %d, want %d", mu.Line, tc.line)
					}
					if mu.Description == "" {
						t.Errorf("mutant has no description")
					}
					return
				}
				codes = append(codes, mu.Code)
			}
			t.Fatalf("got mutants %q, want one equal to %q", codes, tc.want)
		})
	}
}

// TestMutateDeterministic checks that a seed fixes the chosen sites and that
// the per-operator cap holds.
func TestMutateDeterministic(t *testing.T) {
	m := &Mutator{Exec: sandbox(t), PerOperator: 1}
	src := "def f(xs, k):\n    out = []\n    for i in range(len(xs)):\n        if xs[i] > k and xs[i] % 2 == 0:\n            out.append(xs[i] + 1)\n    return out\n"
	ctx := context.Background()
	a, err := m.Mutate(ctx, src, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Mutate(ctx, src, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed gave different mutants:\n%v\n%v", a, b)
	}
	per := map[string]int{}
	for _, mu := range a {
		per[mu.Operator]++
	}
	for op, n := range per {
		if n > 1 {
			t.Errorf("operator %s gave %d mutants, want at most 1", op, n)
		}
	}
	var seeds []string
	for seed := int64(0); seed < 6; seed++ {
		c, err := m.Mutate(ctx, src, seed, []string{"logic_compare_swap", "logic_off_by_one_index"})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, mu := range c {
			s = append(s, mu.Code)
		}
		seeds = append(seeds, strings.Join(s, "\x00"))
	}
	sort.Strings(seeds)
	distinct := 1
	for i := 1; i < len(seeds); i++ {
		if seeds[i] != seeds[i-1] {
			distinct++
		}
	}
	if distinct < 2 {
		t.Errorf("6 seeds gave %d distinct mutant sets, want at least 2", distinct)
	}
	if _, err := m.Mutate(ctx, "def f(:\n", 1, nil); err == nil {
		t.Errorf("unparsable source: got no error")
	}
	if _, err := m.Mutate(ctx, src, 1, []string{"no_such_op"}); err == nil {
		t.Errorf("unknown operator: got no error")
	}
}
