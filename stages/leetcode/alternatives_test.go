package leetcode

import (
	"reflect"
	"testing"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/schema"
)

func TestComplexityGate(t *testing.T) {
	brute := "Loop over all pairs, O(n^2) time:\n```python\ndef f(xs):\n    # all pairs\n    return max(a + b for a in xs for b in xs)\n```"
	same := "Faster:\n```python\ndef f(xs):\n    return max(a + b for a in xs for b in xs)  # O(n^2)\n```"
	optimal := "Sort once, O(n log n) time and O(1) space:\n```python\ndef f(xs):\n    xs = sorted(xs)\n    return 2 * xs[-1]\n```"
	silent := "Sort once:\n```python\ndef f(xs):\n    return 2 * max(xs)\n```"
	dlg := func(a, b string) []schema.Message {
		return []schema.Message{{Role: schema.RoleUser, Content: "brute"}, {Role: schema.RoleAssistant, Content: a},
			{Role: schema.RoleExecution, Content: "ok"}, {Role: schema.RoleUser, Content: "optimal"}, {Role: schema.RoleAssistant, Content: b}}
	}
	for _, tc := range []struct {
		name, second, want string
	}{
		{"differs and states complexity", optimal, ""},
		{"same after normalising", same, RejectSame},
		{"no complexity", silent, RejectNoComplexity},
	} {
		if got := complexityGate(dlg(brute, tc.second)); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	// The optimal turn needed a fix after a failed run: its complexity was
	// stated by the first answer of the turn, not repeated by the fix.
	fixed := append(dlg(brute, optimal), schema.Message{Role: schema.RoleExecution, Content: "AssertionError"},
		schema.Message{Role: schema.RoleAssistant, Content: "The last element is not the maximum here; fixed:\n```python\ndef f(xs):\n    xs = sorted(xs)\n    return xs[-1] + xs[-1]\n```"})
	if got := complexityGate(fixed); got != "" {
		t.Errorf("fixed optimal turn: got %q, want accepted (the turn's first answer states its complexity)", got)
	}
	silentFix := append(dlg(brute, silent), fixed[len(fixed)-2:]...)
	if got := complexityGate(silentFix); got != RejectNoComplexity {
		t.Errorf("a turn no answer of which states a complexity: got %q, want %q", got, RejectNoComplexity)
	}
}

func TestTranslateTests(t *testing.T) {
	p := schema.Problem{EntryPoint: "Solution().twoSum", Tests: []string{"def check(candidate):\n" +
		"    assert candidate(nums = [2, 7, 11, 15], target = 9) == [0, 1]\n" +
		"    assert candidate(nums = ['a', \"b\"], target = None) == True\n" +
		"    assert is_same_list(candidate(head = list_node([1])), list_node([1]))\n" +
		"    assert candidate(nums = (1, 2), target = 3) == [0, 1]\n"}}
	got := translateTests(p, executors.JavaScript, "var twoSum = function(nums, target) {};")
	want := []string{"assert.deepStrictEqual(twoSum([2, 7, 11, 15], 9), [0, 1]);", `assert.deepStrictEqual(twoSum(["a", "b"], null), true);`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := translateTests(p, executors.TypeScript, "class Solution { twoSum(n: number[], t: number): number[] { return []; } }"); len(got) != 2 || got[0] != "assert.deepStrictEqual(new Solution().twoSum([2, 7, 11, 15], 9), [0, 1]);" {
		t.Errorf("class form: got %q", got)
	}
	if got := translateTests(p, executors.Java, "class Solution {}"); got != nil {
		t.Errorf("java: got %q, want no translation", got)
	}
}
