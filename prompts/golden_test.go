package prompts

// Golden files: every template in prompts/ is rendered here with data shaped
// as its call site passes it, one case per branch worth seeing, and the text
// is compared with prompts/testdata/golden/<template>__<case>.txt. A prompt
// change thus shows in review as a diff of what the model is sent. After an
// intended change, rewrite the files and read their diff:
//
//	go test ./prompts -run Golden -update
//
// A new template needs cases in goldenCases (the test fails until it has
// some); a golden file no case writes any more fails the test too (-update
// removes it).
//
// The callers (internal/agent, internal/feedbackloop, internal/evaluate,
// stages/...) import this package, so the test cannot call their render
// helpers without an import cycle: the data below are maps with the keys
// and value types those helpers build (named at each case), and the values
// some of them compute (agent.Setting, the correct stage's kind hints,
// feedbackloop's follow-up descriptions) are copied as they read today.
// internal/feedbackloop parses the same text with the same option
// (missingkey=error), so Get+Render renders what it renders.

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/internal/golden"
)

const goldenDir = "testdata/golden"

type goldenCase struct {
	template, name string
	data           any
}

func (c goldenCase) file() string { return filepath.Join(goldenDir, c.template+"__"+c.name+".txt") }

// agentData is internal/agent's run.data: every key the agent templates
// read, with extra on top (loop.go).
func agentData(env, query string, extra map[string]any) map[string]any {
	lang, setting, submit := "bash", "a Bash shell on a Linux machine", "`submit`"
	switch env {
	case "sql":
		lang, setting = "sql", "a SQL database (answer in SQL; the schema can be explored with queries)"
	case "python":
		lang, setting, submit = "python", "a Python 3 interpreter", "`submit NAME`"
	case "ctf":
		setting, submit = "a Linux shell holding a capture-the-flag challenge", "`submit FLAG`"
	}
	d := map[string]any{"Env": env, "Lang": lang, "Setting": setting, "Submit": submit,
		"Query": query, "Turns": 3, "First": false, "Observation": "", "Reward": 0.0,
		"Left": 0, "N": 0, "Step": ""}
	for k, v := range extra {
		d[k] = v
	}
	return d
}

// closingData is internal/agent's Episode.closingData: the defaults with
// the keys an episode of env sets (dialogue.go).
func closingData(env string, variant int, set map[string]any) map[string]any {
	d := map[string]any{"Env": env, "Variant": variant, "Result": "", "Rows": 0, "RowWord": "rows",
		"Lines": 0, "LineWord": "lines", "Quiet": false, "Function": "",
		"Counted": false, "Shown": 0, "Cut": false}
	for k, v := range set {
		d[k] = v
	}
	return d
}

const (
	mbppText   = "Write a function to find the shared elements from the given two lists."
	mbppTest   = "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))"
	hePrompt   = "def add(a: int, b: int) -> int:\n    \"\"\" Add two numbers.\n    >>> add(2, 3)\n    5\n    \"\"\"\n"
	pyCode     = "def similar_elements(a, b):\n    return tuple(set(a) & set(b))\n\nprint(similar_elements((3, 4, 5, 6), (5, 7, 4, 10)))"
	pyOutput   = "(4, 5)"
	traceback  = "Traceback (most recent call last):\n  File \"main.py\", line 2, in <module>\n    return tuple(set(a) & set(bb))\nNameError: name 'bb' is not defined"
	leetcode   = "Given an array of integers nums and an integer target, return indices of the two numbers such that they add up to target."
	taskWithTs = mbppText + "\nYour code should pass these tests:\n\n```python\n" + mbppTest + "\n```"
)

// feedbackCategories is schema.FeedbackCategories as feedbackloop names
// them in the prompt (underscores as spaces, joined by ", ").
const feedbackCategories = "syntax, efficiency, functionality, clarity, bugs, security, compatibility, resource use, scalability, best practices"

func goldenCases() []goldenCase {
	return []goldenCase{
		// internal/agent: system prompt per environment (agent.go), the
		// strategies' first and later messages (loop.go).
		{"agent_system", "bash", agentData("bash", "", nil)},
		{"agent_system", "python", agentData("python", "", nil)},
		{"agent_system", "ctf", agentData("ctf", "", nil)},
		{"agent_system", "sql", agentData("sql", "", nil)},
		{"agent_single", "bash", agentData("bash", "Count the .txt files under /data.", map[string]any{"First": true})},
		{"agent_tryagain", "first", agentData("sql", "How many singers are there?", map[string]any{"First": true})},
		{"agent_tryagain", "retry", agentData("bash", "Count the .txt files under /data.",
			map[string]any{"Observation": "7", "Reward": 0.5, "Left": 2})},
		{"agent_react", "first", agentData("ctf", "Find the flag hidden in the image.", map[string]any{"First": true})},
		{"agent_react", "observation", agentData("ctf", "Find the flag hidden in the image.",
			map[string]any{"N": 2, "Observation": "flag.png: PNG image data, 64 x 64"})},
		{"agent_plan", "first", agentData("python", "Write is_prime(n).", map[string]any{"First": true})},
		{"agent_plan", "step1", agentData("python", "Write is_prime(n).", map[string]any{"N": 1, "Step": "Handle n < 2.", "Observation": ""})},
		{"agent_plan", "step2", agentData("python", "Write is_prime(n).",
			map[string]any{"N": 2, "Step": "Try divisors up to sqrt(n).", "Observation": "(no output)"})},
		{"agent_plan", "done", agentData("python", "Write is_prime(n).",
			map[string]any{"Observation": "1 of 3 tests passed", "Reward": 0.33, "Left": 1})},
		{"agent_no_action", "sql", agentData("sql", "How many singers are there?", nil)},

		// internal/agent dialogue.go: the task turn and the closing turn.
		{"interact_task", "sql_db", map[string]any{"Query": "How many singers are there?", "Env": "sql", "DB": "concert_singer"}},
		{"interact_task", "sql_nodb", map[string]any{"Query": "How many singers are there?", "Env": "sql", "DB": ""}},
		{"interact_task", "bash", map[string]any{"Query": "Count the .txt files under /data.", "Env": "bash", "DB": ""}},
		{"interact_task", "ctf", map[string]any{"Query": "Find the flag hidden in the image.", "Env": "ctf", "DB": ""}},
		{"interact_task", "python", map[string]any{"Query": "Write is_prime(n).", "Env": "python", "DB": ""}},
		{"interact_closing", "sql_value", closingData("sql", 0, map[string]any{"Result": "`6`", "Counted": true, "Rows": 1, "Shown": 1, "RowWord": "row"})},
		{"interact_closing", "sql_uncounted", closingData("sql", 2, nil)},
		{"interact_closing", "sql_empty", closingData("sql", 1, map[string]any{"Counted": true})},
		{"interact_closing", "sql_cut", closingData("sql", 3, map[string]any{"Counted": true, "Rows": 120, "Shown": 50, "Cut": true})},
		{"interact_closing", "sql_rows", closingData("sql", 0, map[string]any{"Counted": true, "Rows": 3, "Shown": 3})},
		{"interact_closing", "sql_one_row", closingData("sql", 1, map[string]any{"Counted": true, "Rows": 1, "Shown": 1, "RowWord": "row"})},
		{"interact_closing", "python_function", closingData("python", 0, map[string]any{"Result": "all 3 tests", "Function": "is_prime"})},
		{"interact_closing", "python_plain", closingData("python", 2, nil)},
		{"interact_closing", "ctf_flag", closingData("ctf", 2, map[string]any{"Result": "`picoCTF{h1dd3n}`"})},
		{"interact_closing", "ctf_plain", closingData("ctf", 0, nil)},
		{"interact_closing", "bash_value", closingData("bash", 3, map[string]any{"Result": "`7`"})},
		{"interact_closing", "bash_lines", closingData("bash", 0, map[string]any{"Lines": 4})},
		{"interact_closing", "bash_one_line", closingData("bash", 1, map[string]any{"Lines": 1, "LineWord": "line"})},
		{"interact_closing", "bash_quiet", closingData("bash", 2, map[string]any{"Quiet": true})},
		{"interact_closing", "bash_plain", closingData("bash", 0, nil)},

		// internal/feedbackloop: loop.go (writer, task), rounds.go (judge,
		// feedback, follow-up, summary, closing).
		{"simulate_writer", "runnable", map[string]any{"Language": "python", "Runnable": true}},
		{"simulate_writer", "not_runnable", map[string]any{"Language": "haskell", "Runnable": false}},
		{"simulate_task", "text", map[string]any{"Text": "Reverse the words of a sentence.", "Prompt": "", "Tests": []string(nil)}},
		{"simulate_task", "mbpp", map[string]any{"Text": mbppText, "Prompt": "", "Tests": []string{mbppTest, "assert True"}}},
		{"simulate_task", "humaneval", map[string]any{"Text": "Add two numbers.", "Prompt": strings.TrimRight(hePrompt, "\n"),
			"Tests": []string{"def check(candidate):\n    assert candidate(2, 3) == 5"}}},
		{"judge_request", "ran", map[string]any{"Task": mbppText, "Language": "python", "Code": pyCode, "Output": pyOutput, "Ran": true}},
		{"judge_request", "not_run", map[string]any{"Task": "Write a function that reverses a list.", "Language": "haskell",
			"Code": "rev = foldl (flip (:)) []", "Output": "the sandbox has no haskell runner", "Ran": false}},
		{"feedback_request", "oracle", map[string]any{"Task": mbppText, "Language": "python", "Code": pyCode, "Output": pyOutput,
			"Solution": "def similar_elements(a, b):\n    return tuple(sorted(set(a) & set(b)))", "Categories": feedbackCategories, "Category": "best practices"}},
		{"feedback_request", "no_oracle", map[string]any{"Task": mbppText, "Language": "python", "Code": pyCode, "Output": pyOutput,
			"Solution": "", "Categories": feedbackCategories, "Category": "efficiency"}},
		{"followup_request", "edge_cases", map[string]any{"Task": mbppText, "Language": "python", "Code": pyCode, "Output": pyOutput,
			"Kind": "edge_cases", "Description": "handle edge cases: ask that the code cope with unusual inputs (empty, very large or invalid ones) in a defined way"}},
		{"simulate_summary", "tests3", map[string]any{"Tests": 3, "Name": "similar_elements", "Silent": false, "Kept": false}},
		{"simulate_summary", "silent", map[string]any{"Tests": 0, "Name": "similar_elements", "Silent": true, "Kept": false}},
		{"simulate_summary", "kept", map[string]any{"Tests": 3, "Name": "similar_elements", "Silent": false, "Kept": true}},
		{"simulate_summary", "untested", map[string]any{"Tests": 0, "Name": "", "Silent": false, "Kept": false}},
		{"simulate_closing", "one_test", map[string]any{"Tests": 1, "Name": "add", "Variant": 2, "Silent": false}},
		{"simulate_closing", "one_test_v5", map[string]any{"Tests": 1, "Name": "", "Variant": 5, "Silent": false}},
		{"simulate_closing", "tests3_v0", map[string]any{"Tests": 3, "Name": "add", "Variant": 0, "Silent": false}},
		{"simulate_closing", "tests3_v5", map[string]any{"Tests": 3, "Name": "add", "Variant": 5, "Silent": false}},
		{"simulate_closing", "tests3_v7", map[string]any{"Tests": 3, "Name": "", "Variant": 7, "Silent": false}},
		{"simulate_closing", "silent_v1", map[string]any{"Tests": 0, "Name": "", "Variant": 1, "Silent": true}},
		{"simulate_closing", "silent_v4", map[string]any{"Tests": 0, "Name": "add", "Variant": 4, "Silent": true}},
		{"simulate_closing", "output_v0", map[string]any{"Tests": 0, "Name": "", "Variant": 0, "Silent": false}},
		{"simulate_closing", "output_v6", map[string]any{"Tests": 0, "Name": "add", "Variant": 6, "Silent": false}},

		// stages/correct model.go: the planted bug, the fix request, the
		// user turn (Python keeps its own templates; lang.go's hints).
		{"correct_inject", "name", map[string]any{"Kind": "name", "KindHint": "a name error: a variable or function that is misspelled or never defined where it is used.",
			"Task": taskWithTs, "Language": "Python", "Fence": "python"}},
		{"correct_inject_lang", "go_runtime", map[string]any{"Kind": "runtime",
			"KindHint": "the code compiles but fails with an exception, a panic or a crash on at least one test input (an index out of range, a null or nil dereference, a division by zero).",
			"Task":     "Write a function Max(xs []int) int.\nYour code should pass these tests:\n\n```go\nif Max([]int{1, 3, 2}) != 3 { panic(\"Max\") }\n```", "Language": "Go", "Fence": "go"}},
		{"correct_fix", "name", map[string]any{"Output": traceback, "Language": "Python", "Fence": "python"}},
		{"correct_fix_lang", "go", map[string]any{"Output": "panic: runtime error: index out of range [3] with length 3", "Language": "Go", "Fence": "go"}},
		{"correct_request", "mbpp", map[string]any{"Task": taskWithTs}},

		// internal/evaluate evaluate.go: first prompts, refinement, feedback.
		{"eval_humaneval", "add", map[string]any{"Prompt": hePrompt, "EntryPoint": "add"}},
		{"eval_mbpp", "tests", map[string]any{"Text": mbppText, "Tests": []string{mbppTest, "assert set(similar_elements((1, 2),(3, 4))) == set()"}, "EntryPoint": "similar_elements"}},
		{"eval_mbpp", "no_tests", map[string]any{"Text": mbppText, "Tests": []string(nil), "EntryPoint": "similar_elements"}},
		{"eval_refine", "execution", map[string]any{"Feedback": traceback, "Human": false}},
		{"eval_refine", "human", map[string]any{"Feedback": "The function misses the case of an empty list.", "Human": true}},
		{"eval_feedback", "oracle", map[string]any{"Task": mbppText, "Code": pyCode, "Output": traceback,
			"Solution": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))"}},
		{"eval_feedback", "no_oracle", map[string]any{"Task": mbppText, "Code": pyCode, "Output": traceback, "Solution": ""}},

		// stages/explain explain.go.
		{"explain_system", "nil", nil},
		{"explain_request", "history", map[string]any{"History": "[User]\nSum a list.\n\n[Assistant]\n```python\nprint(sum([1, 2]))\n```\n\n[Execution result]\n3",
			"Request": "Now make it skip None values.", "Reply": "```python\nprint(sum(x for x in [1, None, 2] if x is not None))\n```", "Sentences": "two to four", "Failure": ""}},
		{"explain_request", "first", map[string]any{"History": "", "Request": "Sum a list.", "Reply": "```python\nprint(sum([1, 2]))\n```", "Sentences": "two to four", "Failure": ""}},
		{"explain_request", "failing", map[string]any{"History": "", "Request": "Sum a list.", "Reply": "```python\nprint(sum([1, 2]) + 1)\n```", "Sentences": "two to four",
			"Failure": "1 of 1 tests failed.\n\nTest failed for input total([1, 2]): expected 3, got 4"}},
		{"explain_repair", "code_block", map[string]any{"Problem": "the preface contains a fenced code block"}},

		// internal/leak embed.go (the audit's judge) passes a map of strings.
		{"audit_same_task", "pair", map[string]string{"Statement": mbppText + "\n" + mbppTest, "Turn": "Give me the items two tuples have in common."}},

		// stages/filter rate.go.
		{"filter_rubric_effort", "query", map[string]any{"Query": mbppText}},
		{"filter_rubric_skills", "query", map[string]any{"Query": mbppText}},

		// stages/leetcode model.go.
		{"leetcode_alt_brute", "two_sum", map[string]any{"Problem": leetcode}},
		{"leetcode_alt_optimal", "nil", nil},
		{"leetcode_alt_python", "two_sum", map[string]any{"Problem": leetcode}},
		{"leetcode_alt_language", "java", map[string]any{"Language": "Java", "Fence": "java"}},

		// stages/pack stage.go.
		{"pack_writer", "python", map[string]any{"Language": "python"}},
	}
}

// TestGoldenPrompts renders every case and compares it with its golden file;
// a template without a case, or a golden file without one, fails.
func TestGoldenPrompts(t *testing.T) {
	cases := goldenCases()
	have := map[string]bool{}
	files := map[string]bool{}
	for _, c := range cases {
		have[c.template] = true
		if files[c.file()] {
			t.Errorf("two cases write %s: give one another name", c.file())
		}
		files[c.file()] = true
		t.Run(c.template+"/"+c.name, func(t *testing.T) {
			tp, err := Get(c.template)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tp.Render(c.data)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			golden.Check(t, c.file(), got)
		})
	}
	for _, n := range templateNames(t) {
		if !have[n] {
			t.Errorf("prompts/%s.tmpl has no golden case: add cases for %q to goldenCases in prompts/golden_test.go, "+
				"with data shaped as its call site passes it, then run go test ./prompts -run Golden -update", n, n)
		}
	}
	// A golden file no case writes is left from a renamed or removed case.
	stale, err := filepath.Glob(filepath.Join(goldenDir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range stale {
		if files[f] {
			continue
		}
		if golden.Updating() {
			if err := os.Remove(f); err != nil {
				t.Error(err)
			}
			continue
		}
		t.Errorf("%s: no case writes this golden file; remove it or run with -update", f)
	}
}

// templateNames lists the embedded templates, sorted.
func templateNames(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(files, "*.tmpl")
	if err != nil || len(names) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for i, f := range names {
		names[i] = strings.TrimSuffix(f, ".tmpl")
	}
	slices.Sort(names)
	return names
}
