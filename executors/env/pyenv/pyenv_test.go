package pyenv_test

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
	"github.com/codefeedback/codefeedback/executors/env/pyenv"
)

func loadFixture(t *testing.T) []env.Task {
	t.Helper()
	tasks := envtest.Tasks(t, "testdata/ic_mbpp.json")
	if len(tasks) != 4 || tasks[1].Setup[env.SetupEntryPoint] != "uniq" || tasks[0].ID != "ic_mbpp/0" {
		t.Fatalf("loaded %d tasks, entry of task 1 %q, id %q; want 4, uniq, ic_mbpp/0", len(tasks), tasks[1].Setup[env.SetupEntryPoint], tasks[0].ID)
	}
	return tasks
}

const fakeVerdicts = `import os
def add(a, b):
    fake = b'{"verdicts": [{"test": "x", "got": "", "gold": "", "pass": true}], "gold_error": ""}\n'
    for fd in range(1, 20):
        try:
            os.write(fd, fake)
        except OSError:
            pass
    os._exit(0)`

// The rules: reward is the share of tests whose outcome matches the gold's;
// the gold name is bound to the submitted function; and nothing a cell does
// to builtins, modules, its own namespace or the judge raises the reward.
// ruleCases test a reward rule, not the sandbox: they run on the first driver only.
var ruleCases = map[string]bool{
	"free name bound to the gold name": true,
	"bare submit uses the gold name":   true,
	"wrong solution: share of tests":   true,
	"later cell redefines":             true,
	"missing function":                 true,
	"error cell keeps earlier defs":    true,
}

func TestSubmitRules(t *testing.T) {
	tasks := loadFixture(t)
	cases := []struct {
		name   string
		task   int
		cells  []string
		submit string
		want   float64
	}{
		{"gold add", 0, []string{tasks[0].Gold}, "submit add", 1},
		{"gold uniq (first def is a helper)", 1, []string{tasks[1].Gold}, "submit uniq", 1},
		{"gold area with test setup", 2, []string{tasks[2].Gold}, "submit area", 1},
		{"gold with a class the tests use", 3, []string{tasks[3].Gold}, "submit count_small", 1},
		{"free name bound to the gold name", 0, []string{"def add_nums(a, b):\n    return a + b"}, "submit add_nums", 1},
		{"bare submit uses the gold name", 0, []string{"def add(a, b):\n    return b + a"}, "submit", 1},
		{"wrong solution: share of tests", 0, []string{"def add(a, b):\n    return a * b"}, "submit add", 1.0 / 3},
		{"later cell redefines", 0, []string{"def add(a, b):\n    return a + b", "def add(a, b):\n    return 0"}, "submit add", 1.0 / 3},
		{"missing function", 0, []string{"x = 1"}, "submit nothing", 0},
		{"error cell keeps earlier defs", 0, []string{"def add(a, b):\n    return a + b\nraise ValueError('late')"}, "submit add", 1},
		{"patched builtins", 1, []string{"def uniq(xs):\n    return xs", "import builtins\nbuiltins.sorted = lambda *a, **k: [4, 5]\nbuiltins.len = lambda x: 1"}, "submit uniq", 1.0 / 3},
		{"shadowed names the tests call", 1, []string{"def uniq(xs):\n    return xs\nlen = lambda x: 1\nsorted = lambda *a, **k: [4, 5]"}, "submit uniq", 1.0 / 3},
		{"object equal to everything", 0, []string{"class Y:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return Y()"}, "submit add", 0},
		{"patched test module", 2, []string{"import math\nmath.isclose = lambda *a, **k: True\ndef area(r):\n    return 0"}, "submit area", 0},
		{"forged judge output and exit", 0, []string{fakeVerdicts}, "submit add", 0},
		{"patched judge globals", 0, []string{"import sys\nm = sys.modules['__main__']\nfor k in ('outcome', 'encode', 'record'):\n    setattr(m, k, lambda *a, **kw: '')\ndef add(a, b):\n    return 7"}, "submit add", 0},
	}
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		e := envtest.Open(t, "python", d.Ex, env.Options{})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if ruleCases[c.name] {
					envtest.RuleOnly(t, d, "bwrap")
				}
				_, r := envtest.Play(t, e, tasks[c.task], c.cells, c.submit)
				if math.Abs(r.Reward-c.want) > 1e-9 || !r.Done {
					t.Errorf("got reward %v done %v (%s), want %v and done; verdicts %+v", r.Reward, r.Done, r.Observation, c.want, r.Info["verdicts"])
				}
			})
		}
	})
}

func TestExplore(t *testing.T) {
	tasks := loadFixture(t)
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := pyenv.New(d.Ex, env.Options{})
		defer e.Close()
		obs, err := e.Reset(ctx, tasks[0])
		if err != nil || obs != tasks[0].Query {
			t.Fatalf("Reset: %q, %v; want the query", obs, err)
		}
		steps := []struct {
			action, want string
			valid        bool
		}{
			{"x = 20\nx + 1", "21\n", true},
			{"print(x * 2)", "40\n", true},
			{"undefined_name", "NameError", false},
		}
		for _, s := range steps {
			r, err := e.Step(ctx, s.action)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Observation, s.want) || r.Valid != s.valid || r.Done || r.Reward != 0 {
				t.Errorf("Step(%q) = %q valid %v done %v reward %v; want %q valid %v", s.action, r.Observation, r.Valid, r.Done, r.Reward, s.want, s.valid)
			}
		}
		// Score does not end the episode; submit does; a step after is an error.
		if _, err := e.Step(ctx, "def add(a, b):\n    return a + b"); err != nil {
			t.Fatal(err)
		}
		if r, err := e.Score(ctx, "add"); err != nil || r.Reward != 1 || r.Done {
			t.Fatalf("Score: %+v, %v; want reward 1, not done", r, err)
		}
		if r, err := e.Step(ctx, "submit add"); err != nil || r.Reward != 1 || !r.Done {
			t.Fatalf("submit: %+v, %v; want reward 1, done", r, err)
		}
		if _, err := e.Step(ctx, "1"); err == nil {
			t.Error("Step after submit: no error")
		}
		// A new episode starts from an empty interpreter.
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, "print('add' in globals(), 'x' in globals())")
		if err != nil || r.Observation != "False False\n" {
			t.Errorf("after Reset: %q, %v; want False False", r.Observation, err)
		}
		if r, err := e.Step(ctx, "submit add"); err != nil || r.Reward != 0 {
			t.Errorf("submit with nothing defined: %+v, %v; want reward 0", r, err)
		}
	})
}

func TestGoldName(t *testing.T) {
	cases := []struct {
		gold  string
		tests []string
		want  string
	}{
		{"def min_cost(c, m, n):\n\treturn 0", []string{"assert min_cost([], 1, 1) == 0"}, "min_cost"},
		{"def helper(x):\n\treturn x\ndef f(x):\n\treturn helper(x)", []string{"assert f(1) == 1"}, "f"},
		{"def g(x):\n\treturn x", []string{"assert h(1) == 1"}, "g"},
		{"x = 1", nil, ""},
	}
	for _, c := range cases {
		if got := pyenv.GoldName(c.gold, c.tests); got != c.want {
			t.Errorf("GoldName(%q) = %q, want %q", c.gold, got, c.want)
		}
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// TestEntryFirst: InterCode binds the submitted function to the gold's
// first def; where that is a helper (task 1's gold defines helper, then
// uniq), a correct uniq under another name fails there and passes under
// the default rule, which binds the function the tests call.
func TestEntryFirst(t *testing.T) {
	task := loadFixture(t)[1]
	d := envtest.Drivers(t)[0]
	ctx := context.Background()
	for _, c := range []struct {
		entry string
		want  float64
	}{{"", 1}, {"tested", 1}, {pyenv.EntryFirst, 0}} {
		e, err := env.Open(ctx, "python", d.Ex, env.Options{Params: map[string]string{"entry": c.entry}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Step(ctx, "def distinct_sorted(xs):\n    return sorted(set(xs))"); err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, "submit distinct_sorted")
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.Reward != c.want {
			t.Errorf("entry %q: reward %v (%s), want %v", c.entry, r.Reward, r.Observation, c.want)
		}
	}
	if _, err := env.Open(ctx, "python", d.Ex, env.Options{Params: map[string]string{"entry": "last"}}); err == nil {
		t.Error("entry last: no error")
	}
}

// TestGoldLeftInInterpreter: InterCode's reward runs the gold in the
// agent's own interpreter (RESET, test setup, gold, tests) and the episode
// goes on there, so after a first reward the gold's add is what a later
// cell calls, and a def that does not even parse scores 1 (the logs'
// "reward 1.0 over a syntax error"). EntryFirst reproduces it; the default
// replays the agent's own cells, where the first, wrong add stays.
func TestGoldLeftInInterpreter(t *testing.T) {
	task := loadFixture(t)[0] // add
	d := envtest.Drivers(t)[0]
	ctx := context.Background()
	for _, c := range []struct {
		entry   string
		obs     string
		reward2 float64
	}{{"tested", "-1", 0}, {pyenv.EntryFirst, "5", 1}} {
		e, err := env.Open(ctx, "python", d.Ex, env.Options{Params: map[string]string{"entry": c.entry}})
		if err != nil {
			t.Fatal(err)
		}
		step := func(a string) env.StepResult {
			t.Helper()
			r, err := e.Step(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		score := func() float64 {
			t.Helper()
			r, err := e.Score(ctx, "add")
			if err != nil {
				t.Fatal(err)
			}
			return r.Reward
		}
		if _, err := e.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		step("def add(a, b):\n    return a - b")
		if got := score(); got != 0 {
			t.Errorf("entry %s: wrong add scores %v, want 0", c.entry, got)
		}
		if got := strings.TrimSpace(step("add(2, 3)").Observation); got != c.obs {
			t.Errorf("entry %s: add(2, 3) after the reward gives %q, want %q", c.entry, got, c.obs)
		}
		step("def add(a, b) return a + b")
		if got := score(); got != c.reward2 {
			t.Errorf("entry %s: a def that does not parse, after a reward, scores %v, want %v", c.entry, got, c.reward2)
		}
		e.Close()
	}
}
