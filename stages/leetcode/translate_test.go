package leetcode

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors"
	"github.com/codefeedback/codefeedback/executors/harness"
	"github.com/codefeedback/codefeedback/schema"
)

var twoSumTests = schema.Problem{EntryPoint: "Solution().twoSum", Tests: []string{"def check(candidate):\n" +
	"    assert candidate(nums = [2,7,11,15], target = 9) == [0,1]\n" +
	"    assert candidate(target = 6, nums = [3,2,4]) == [1,2]\n" + // by name, out of order
	"    assert candidate(nums = [3,3], target = None) == [0,1]\n" + // None fits no int
	"    assert candidate(nums = (1, 2), target = 3) == [0,1]\n"}} // a tuple: left out

func TestTranslateTyped(t *testing.T) {
	for _, tc := range []struct {
		lang executors.Language
		code string
		want []string
	}{
		{executors.Java, "class Solution {\n    public int[] twoSum(int[] nums, int target) { return null; }\n}",
			[]string{"assertEquals(new Solution().twoSum(new int[]{2, 7, 11, 15}, 9), new int[]{0, 1});",
				"assertEquals(new Solution().twoSum(new int[]{3, 2, 4}, 6), new int[]{1, 2});"}},
		{executors.Java, "class Solution { public List<List<Long>> twoSum(List<String> nums, long target) { return null; } }",
			nil}, // values do not fit: [2,7,11,15] is not a list of strings
		{executors.CPP, "class Solution {\npublic:\n    vector<int> twoSum(vector<int>& nums, int target) { return {}; }\n};",
			[]string{"assert([&] { vector<int> cf_a0 = vector<int>{2, 7, 11, 15}; int cf_a1 = 9; return Solution().twoSum(cf_a0, cf_a1); }() == vector<int>{0, 1});",
				"assert([&] { vector<int> cf_a0 = vector<int>{3, 2, 4}; int cf_a1 = 6; return Solution().twoSum(cf_a0, cf_a1); }() == vector<int>{1, 2});"}},
		{executors.Go, "func twoSum(nums []int, target int) []int { return nil }",
			[]string{"assertEqual(twoSum([]int{2, 7, 11, 15}, 9), []int{0, 1})", "assertEqual(twoSum([]int{3, 2, 4}, 6), []int{1, 2})"}},
		{executors.Rust, "impl Solution {\n    pub fn two_sum(nums: Vec<i32>, target: i32) -> Vec<i32> { vec![] }\n}",
			[]string{"assert_eq!(Solution::two_sum(vec![2, 7, 11, 15], 9), vec![0, 1]);", "assert_eq!(Solution::two_sum(vec![3, 2, 4], 6), vec![1, 2]);"}},
		{executors.Go, "func other(nums []int) int { return 0 }", nil}, // no such function
	} {
		got := translateTests(twoSumTests, tc.lang, tc.code)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %.50q:\n got %q\nwant %q", tc.lang, tc.code, got, tc.want)
		}
	}
}

// parseType knows each language's scalar spellings, keeps the type as
// written (C++ without const and &), and refuses lists of void and what
// the translation does not handle.
func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		lang executors.Language
		typ  string
		want string // kind, then the element's kind for a list, "w" for wide, then raw; "" = refused
	}{
		{executors.Java, "Integer", "i Integer"},
		{executors.Java, "long", "iw long"},
		{executors.Java, "Long", "iw Long"},
		{executors.Java, "Float", "f Float"},
		{executors.Java, "Character", "c Character"},
		{executors.Java, "void", "v "},
		{executors.Java, "boolean[]", "lb boolean[]"},
		{executors.Java, "java.util.List<String>", "ls java.util.List<String>"},
		{executors.Java, "void[]", ""},
		{executors.Java, "List<void>", ""},
		{executors.CPP, "const std::string &", "s std::string"},
		{executors.CPP, "long long", "i long long"},
		{executors.CPP, "vector<char>", "lc vector<char>"},
		{executors.CPP, "vector<void>", ""},
		{executors.Go, "rune", "c rune"},
		{executors.Go, "", "v "},
		{executors.Go, "[]float32", "lf []float32"},
		{executors.Rust, "&str", "s &str"},
		{executors.Rust, "()", "v "},
		{executors.Rust, "usize", "i usize"},
		{executors.Rust, "Vec<()>", ""},
		{executors.Rust, "Option<i32>", ""},
		{executors.Go, "map[string]int", ""},
	} {
		ty, ok := parseType(tc.lang, tc.typ)
		got := ""
		if ok {
			got = string(ty.kind)
			if ty.elem != nil {
				got += string(ty.elem.kind)
			}
			if ty.wide {
				got += "w"
			}
			got += " " + ty.raw
		}
		if got != tc.want {
			t.Errorf("%s %q: got %q, want %q", tc.lang, tc.typ, got, tc.want)
		}
	}
}

func TestTypedLiterals(t *testing.T) {
	for _, tc := range []struct {
		lang executors.Language
		typ  string
		val  string
		want string // "" = does not fit
	}{
		{executors.Java, "int[][]", "[[1,3],[2,6]]", "new int[][]{{1, 3}, {2, 6}}"},
		{executors.Java, "List<String>", `["1","2","Fizz"]`, `java.util.Arrays.asList("1", "2", "Fizz")`},
		{executors.Java, "List<Integer>", `[]`, `new java.util.ArrayList<Integer>()`},
		{executors.Java, "double", "2", "2.0"},
		{executors.Java, "long", "-5", "-5L"},
		{executors.Java, "char[]", `["a","'"]`, `new char[]{'a', '\''}`},
		{executors.Java, "String", `'say "hi"\n'`, `"say \"hi\"\n"`},
		{executors.CPP, "const vector<string>&", `["a"]`, `vector<string>{"a"}`},
		{executors.CPP, "string", `"ab"`, `std::string("ab")`},
		{executors.Go, "[][]int", "[[1],[]]", "[][]int{{1}, {}}"},
		{executors.Go, "float64", "2.5", "2.5"},
		{executors.Rust, "Vec<String>", `["x"]`, `vec![String::from("x")]`},
		{executors.Rust, "bool", "True", "true"},
		{executors.Rust, "i32", "None", ""},
		{executors.Go, "int", "[1]", ""},
		{executors.Java, "Map<String, Integer>", `{}`, ""},
	} {
		ty, ok := parseType(tc.lang, tc.typ)
		got := ""
		if ok {
			if v, good := parsePyLiteral(tc.val); good {
				got, _ = literal(tc.lang, ty, v, true)
			}
		}
		if got != tc.want {
			t.Errorf("%s %s %s: got %q, want %q", tc.lang, tc.typ, tc.val, got, tc.want)
		}
	}
}

// leetcodeSolutions are reference solutions in four languages to three real
// LeetCode problems; bug is a planted change that gives wrong answers.
var leetcodeSolutions = []struct {
	task   string // task_id in LeetCodeDataset v0.2.0 train
	lang   executors.Language
	code   string
	bugOld string
	bugNew string
}{
	{"two-sum", executors.Java, "class Solution {\n    public int[] twoSum(int[] nums, int target) {\n        Map<Integer, Integer> seen = new HashMap<>();\n        for (int i = 0; i < nums.length; i++) {\n            Integer j = seen.get(target - nums[i]);\n            if (j != null) return new int[]{j, i};\n            seen.put(nums[i], i);\n        }\n        return new int[0];\n    }\n}\n", "{j, i}", "{i, j}"},
	{"two-sum", executors.CPP, "class Solution {\npublic:\n    vector<int> twoSum(vector<int>& nums, int target) {\n        unordered_map<int, int> seen;\n        for (int i = 0; i < (int)nums.size(); i++) {\n            auto it = seen.find(target - nums[i]);\n            if (it != seen.end()) return {it->second, i};\n            seen[nums[i]] = i;\n        }\n        return {};\n    }\n};\n", "{it->second, i}", "{i, it->second}"},
	{"two-sum", executors.Go, "func twoSum(nums []int, target int) []int {\n\tseen := map[int]int{}\n\tfor i, x := range nums {\n\t\tif j, ok := seen[target-x]; ok {\n\t\t\treturn []int{j, i}\n\t\t}\n\t\tseen[x] = i\n\t}\n\treturn nil\n}\n", "{j, i}", "{i, j}"},
	{"two-sum", executors.Rust, "use std::collections::HashMap;\n\nimpl Solution {\n    pub fn two_sum(nums: Vec<i32>, target: i32) -> Vec<i32> {\n        let mut seen = HashMap::new();\n        for (i, &x) in nums.iter().enumerate() {\n            if let Some(&j) = seen.get(&(target - x)) {\n                return vec![j as i32, i as i32];\n            }\n            seen.insert(x, i);\n        }\n        vec![]\n    }\n}\n", "vec![j as i32, i as i32]", "vec![i as i32, j as i32]"},
	{"longest-common-prefix", executors.Java, "class Solution {\n    public String longestCommonPrefix(String[] strs) {\n        String p = strs[0];\n        for (String s : strs)\n            while (!s.startsWith(p)) p = p.substring(0, p.length() - 1);\n        return p;\n    }\n}\n", "return p;", "return strs[0];"},
	{"longest-common-prefix", executors.CPP, "class Solution {\npublic:\n    string longestCommonPrefix(vector<string>& strs) {\n        string p = strs[0];\n        for (const string& s : strs)\n            while (s.compare(0, p.size(), p) != 0) p.pop_back();\n        return p;\n    }\n};\n", "return p;", "return strs[0];"},
	{"longest-common-prefix", executors.Go, "import \"strings\"\n\nfunc longestCommonPrefix(strs []string) string {\n\tp := strs[0]\n\tfor _, s := range strs {\n\t\tfor !strings.HasPrefix(s, p) {\n\t\t\tp = p[:len(p)-1]\n\t\t}\n\t}\n\treturn p\n}\n", "return p\n", "return strs[0]\n"},
	{"longest-common-prefix", executors.Rust, "impl Solution {\n    pub fn longest_common_prefix(strs: Vec<String>) -> String {\n        let mut p = strs[0].clone();\n        for s in &strs {\n            while !s.starts_with(p.as_str()) {\n                p.pop();\n            }\n        }\n        p\n    }\n}\n", "        p\n    }", "        strs[0].clone()\n    }"},
	{"fizz-buzz", executors.Java, "class Solution {\n    public List<String> fizzBuzz(int n) {\n        List<String> out = new ArrayList<>();\n        for (int i = 1; i <= n; i++) {\n            if (i % 15 == 0) out.add(\"FizzBuzz\");\n            else if (i % 3 == 0) out.add(\"Fizz\");\n            else if (i % 5 == 0) out.add(\"Buzz\");\n            else out.add(String.valueOf(i));\n        }\n        return out;\n    }\n}\n", "% 15", "% 10"},
	{"fizz-buzz", executors.CPP, "class Solution {\npublic:\n    vector<string> fizzBuzz(int n) {\n        vector<string> out;\n        for (int i = 1; i <= n; i++) {\n            if (i % 15 == 0) out.push_back(\"FizzBuzz\");\n            else if (i % 3 == 0) out.push_back(\"Fizz\");\n            else if (i % 5 == 0) out.push_back(\"Buzz\");\n            else out.push_back(to_string(i));\n        }\n        return out;\n    }\n};\n", "% 15", "% 10"},
	{"fizz-buzz", executors.Go, "import \"strconv\"\n\nfunc fizzBuzz(n int) []string {\n\tout := []string{}\n\tfor i := 1; i <= n; i++ {\n\t\tswitch {\n\t\tcase i%15 == 0:\n\t\t\tout = append(out, \"FizzBuzz\")\n\t\tcase i%3 == 0:\n\t\t\tout = append(out, \"Fizz\")\n\t\tcase i%5 == 0:\n\t\t\tout = append(out, \"Buzz\")\n\t\tdefault:\n\t\t\tout = append(out, strconv.Itoa(i))\n\t\t}\n\t}\n\treturn out\n}\n", "%15", "%10"},
	{"fizz-buzz", executors.Rust, "impl Solution {\n    pub fn fizz_buzz(n: i32) -> Vec<String> {\n        (1..=n)\n            .map(|i| {\n                if i % 15 == 0 {\n                    \"FizzBuzz\".to_string()\n                } else if i % 3 == 0 {\n                    \"Fizz\".to_string()\n                } else if i % 5 == 0 {\n                    \"Buzz\".to_string()\n                } else {\n                    i.to_string()\n                }\n            })\n            .collect()\n    }\n}\n", "% 15", "% 10"},
}

// TestTranslatedTestsJudgeRealProblems translates the real tests of three
// LeetCode problems into Java, C++, Go and Rust and judges reference
// solutions (they pass every translated test) and planted bugs (wrong
// answers) in the sandbox. CODEFEEDBACK_LANG_FULL=1 runs all twelve; by
// default two (Go and Java: C++ with bits/stdc++.h and Rust compile slowly).
func TestTranslatedTestsJudgeRealProblems(t *testing.T) {
	ps := loadLeetCode(t, "leetcode/LeetCodeDataset-v0.2.0-train.jsonl.gz")
	byTask := map[string]schema.Problem{}
	for _, p := range ps {
		byTask[p.ID] = p
	}
	ex := sandbox(t)
	ctx := context.Background()
	full := os.Getenv("CODEFEEDBACK_LANG_FULL") == "1"
	sample := map[string]executors.Language{"two-sum": executors.Go, "fizz-buzz": executors.Java} // the fastest compilers
	opts := harness.Options{Timeout: 120 * time.Second, CaseTimeout: 10 * time.Second}
	for _, s := range leetcodeSolutions {
		if !full && sample[s.task] != s.lang {
			continue
		}
		t.Run(s.task+"/"+string(s.lang), func(t *testing.T) {
			var p schema.Problem
			for id, q := range byTask {
				if strings.HasSuffix(id, s.task) {
					p = q
				}
			}
			if p.EntryPoint == "" {
				t.Fatalf("no problem %s in the data", s.task)
			}
			tests := translateTests(p, s.lang, s.code)
			if want := len(leetcodeAsserts(p)); len(tests) != want || want == 0 {
				t.Fatalf("translated %d of %d asserts: %q", len(tests), want, tests)
			}
			prob := schema.Problem{Query: p.Query, Tests: tests}
			v, err := harness.JudgeIn(ctx, ex, s.lang, prob, leetcodePrelude(s.lang, s.code)+s.code, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Passed || v.PassedCount != len(tests) {
				t.Fatalf("reference: %d/%d passed; feedback:\n%s\nstderr: %s", v.PassedCount, v.Total, v.Feedback, v.Result.Stderr)
			}
			if !strings.Contains(s.code, s.bugOld) {
				t.Fatalf("the bug's text %q is not in the solution", s.bugOld)
			}
			bug := strings.Replace(s.code, s.bugOld, s.bugNew, 1)
			v, err = harness.JudgeIn(ctx, ex, s.lang, prob, leetcodePrelude(s.lang, bug)+bug, opts)
			if err != nil {
				t.Fatal(err)
			}
			if v.Passed || v.Outcome() != harness.OutcomeWrongAnswer {
				t.Errorf("planted bug: passed %v outcome %q, want wrong_answer; feedback:\n%s", v.Passed, v.Outcome(), v.Feedback)
			}
		})
	}
}

// Both readers of Python literals take strings through pyString: the
// escapes it knows are decoded, one it does not know drops the literal
// (\x41 must not become "x41").
func TestPyStringLiterals(t *testing.T) {
	for _, c := range []struct {
		py, js string
		ok     bool
	}{
		{`['a\'b', "c\"d", 'e\\f']`, `["a'b", "c\"d", "e\\f"]`, true},
		{`{'k': 'x\ny\tz'}`, `{"k": "x\ny\tz"}`, true},
		{`[1, -2.5e3, True, None]`, `[1, -2.5e3, true, null]`, true},
		{`'\x41'`, "", false},
		{`'open`, "", false},
	} {
		js, ok := pyLiteralToJS(c.py)
		if js != c.js || ok != c.ok {
			t.Errorf("pyLiteralToJS(%s) = %s, %v; want %s, %v", c.py, js, ok, c.js, c.ok)
		}
		if v, ok := parsePyLiteral(c.py); c.ok && !strings.HasPrefix(c.py, "{") && !ok {
			t.Errorf("parsePyLiteral(%s) failed", c.py)
		} else if !c.ok && ok {
			t.Errorf("parsePyLiteral(%s) = %+v, want a failure", c.py, v)
		}
	}
}
