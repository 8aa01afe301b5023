package env_test

import (
	"context"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
)

func TestNetworkFailure(t *testing.T) {
	cases := []struct {
		out  string
		want bool
	}{
		{"curl: (6) Could not resolve host: example.com\n", true},
		{";; communications error to ::1#53: connection refused\n", true},
		{";; connection timed out; no servers could be reached\n", true},
		{"ping: google.com: Temporary failure in name resolution\n", true},
		{"wget: unable to resolve host address 'example.com'\n", true},
		{"connect: Network is unreachable\n", true},
		{"142.251.40.110\n", false},
		{"", false},
		{"grep: host: No such file or directory\n", false},
		{"resolved 3 hosts\n", false},
	}
	for _, c := range cases {
		if got := env.NetworkFailure(c.out); got != c.want {
			t.Errorf("NetworkFailure(%q) = %v, want %v", c.out, got, c.want)
		}
	}
}

// scripted is an Env whose actions print a fixed output and whose gold
// prints another; the reward is 1 when the two are equal.
type scripted struct {
	out  map[string]string
	gold string
	last string
}

func (s *scripted) Reset(context.Context, env.Task) (string, error) { return "", nil }
func (s *scripted) Step(_ context.Context, a string) (env.StepResult, error) {
	s.last = s.out[a]
	return env.StepResult{Observation: s.last, Valid: true}, nil
}
func (s *scripted) Score(context.Context, string) (env.StepResult, error) {
	r := 0.0
	if s.last == s.gold {
		r = 1
	}
	return env.StepResult{Reward: r, Info: map[string]any{"gold_obs": s.gold}}, nil
}
func (s *scripted) Close() error { return nil }

// TestReplayNetwork: a trajectory is set apart as needing the network when
// a command here found none where InterCode's logged output shows it had
// one, through the gold's output or the agent's; not when InterCode's
// output failed alike.
func TestReplayNetwork(t *testing.T) {
	noDNS := ";; communications error to ::1#53: connection refused\n"
	cases := []struct {
		name      string
		out       map[string]string
		gold      string
		loggedObs string
		want      bool
	}{
		{"gold and agent fail alike here, answered there", map[string]string{"dig x": noDNS}, noDNS, "x. 120 IN A 1.2.3.4\n", true},
		{"agent fails here, gold filters it out", map[string]string{"dig x": noDNS}, "\n", "1.2.3.4\n", true},
		{"failed there too", map[string]string{"dig x": noDNS}, noDNS, noDNS, false},
		{"no network used", map[string]string{"ls": "a\n"}, "a\n", "a\n", false},
		{"a client waits out its retries", map[string]string{"dig +short x": "Command timed out"}, "Command timed out", "1.2.3.4\n", true},
		{"a timeout without a network client", map[string]string{"sleep 20": "Command timed out"}, "Command timed out", "", false},
		{"the same output there", map[string]string{"dig x | grep -c y": "0\n"}, "0\n", "0\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var action string
			for a := range c.out {
				action = a
			}
			tr := env.Trajectory{Environment: "ic_bash", TaskID: 3}
			tr.TurnHistory.Actions = []string{action}
			tr.TurnHistory.Observations = []string{c.loggedObs}
			tr.TurnHistory.Rewards = []float64{1}
			res, err := env.Replay(context.Background(), &scripted{out: c.out, gold: c.gold}, "bash", tr)
			if err != nil {
				t.Fatal(err)
			}
			if res.Network != c.want {
				t.Errorf("Network = %v, want %v", res.Network, c.want)
			}
			if len(res.Steps) != 1 || res.Steps[0].GoldObs != c.gold {
				t.Errorf("steps %+v, want the gold's output %q recorded", res.Steps, c.gold)
			}
		})
	}
}

// LoggedDataset names a task file as InterCode's logs do; DataFileFor
// finds the task file of the dataset a trajectory logs, in InterCode's
// repository layout. Each case is {in, want}.
func TestDatasetPaths(t *testing.T) {
	for _, f := range []struct {
		name  string
		fn    func(string) string
		cases [][2]string
	}{
		{"LoggedDataset", env.LoggedDataset, [][2]string{
			{"/root/.cache/codefeedback/intercode/c3e46d827cfc/data/sql/spider/ic_spider_dev.json", "./data/sql/spider/ic_spider_dev.json"},
			{"/tmp/icdata/data/nl2bash/nl2bash_fs_1.json", "./data/nl2bash/nl2bash_fs_1.json"},
			{"data/python/mbpp/ic_mbpp.json", "./data/python/mbpp/ic_mbpp.json"},
			{"./data/ctf/ic_ctf.json", "./data/ctf/ic_ctf.json"},
			{"/home/u/tasks.jsonl", "./tasks.jsonl"},
			{"/a/database/x.json", "./x.json"},
		}},
		{"DataFileFor", env.DataFileFor, [][2]string{
			{"./data/nl2bash/nl2bash_fs_1.json", "data/nl2bash/nl2bash_fs_1.json"},
			{"./data/NL2Bash/nl2bash_FS_3.json", "data/nl2bash/nl2bash_fs_3.json"},
			{"./data/nl2bash/test_queries.json", "data/nl2bash/test_queries.json"},
			{"./data/spider/dev_spider.json", "data/sql/spider/ic_spider_dev.json"},
			{"./data/bird/ic_bird.json", "data/sql/bird/ic_bird.json"},
			{"./data/wikisql/dev.json", "data/sql/wikisql/ic_wikisql_dev.json"},
			{"./data/python/mbpp/ic_mbpp.json", "data/python/mbpp/ic_mbpp.json"},
			{"./data/ctf/ic_ctf.json", "data/ctf/ic_ctf.json"},
			{"./tasks.jsonl", ""},
		}},
	} {
		for _, c := range f.cases {
			if got := f.fn(c[0]); got != c[1] {
				t.Errorf("%s(%q) = %q, want %q", f.name, c[0], got, c[1])
			}
		}
	}
}

// fixed is an Env whose every score is reward with info.
type fixed struct {
	obs    string
	reward float64
	info   map[string]any
}

func (f *fixed) Reset(context.Context, env.Task) (string, error) { return "", nil }
func (f *fixed) Step(ctx context.Context, a string) (env.StepResult, error) {
	if _, ok := env.SubmitArg(a); ok {
		r, err := f.Score(ctx, "")
		r.Done = true
		return r, err
	}
	return env.StepResult{Observation: f.obs, Valid: true, Info: f.info}, nil
}
func (f *fixed) Score(context.Context, string) (env.StepResult, error) {
	return env.StepResult{Reward: f.reward, Info: f.info}, nil
}
func (f *fixed) Close() error { return nil }

// TestReplayCauses: every disagreement with InterCode's logged reward is
// given its cause, and a success disagreement the cause of the step where
// one side first succeeded.
func TestReplayCauses(t *testing.T) {
	syntax := "{'error': 'Error: invalid syntax (<string>, line 6)'}"
	cases := []struct {
		name, envName, action, loggedObs string
		logged                           float64
		e                                *fixed
		want                             string
	}{
		{"python: InterCode rewarded code its log shows failing", "python", "def f(x):\n    return x  print(f(1))", syntax, 1,
			&fixed{reward: 0}, env.DisagreeLog},
		{"python: a clean log, our reward differs", "python", "def f(x):\n    return x", "{'output': '', 'error': ''}", 1,
			&fixed{reward: 0}, env.DisagreeOurs},
		{"python: ours higher over an error log", "python", "def f(x):\n    return x", syntax, 0,
			&fixed{reward: 1}, env.DisagreeOurs},
		{"python: InterCode bound a helper", "python", "def remove_chars(a, b):\n    return a", "Test case did not pass. Please try again.", 0,
			&fixed{reward: 1, info: map[string]any{env.InfoFirstDef: "str_to_list", "entry": "remove_dirty_chars", "submitted_function": "remove_chars"}}, env.DisagreeAlias},
		{"sql: other rows there", "sql", "SELECT Title FROM cartoon ORDER BY STR_TO_DATE(d, '%M%d,%Y')", "[('The Rise',), ('Terror',)]", 1,
			&fixed{reward: 0.5, info: map[string]any{env.InfoPyRows: "[('Terror',), ('The Rise',)]"}}, env.DisagreeEngine},
		{"sql: an error there only", "sql", "SELECT MIN(v), code FROM templates", "Error executing query: In aggregated query without GROUP BY", 0,
			&fixed{reward: 1, info: map[string]any{env.InfoPyRows: "[(0, 'PP')]"}}, env.DisagreeEngine},
		{"sql: the same rows, the gold's differed there", "sql", "SELECT id FROM tv_channel GROUP BY id HAVING COUNT(*) > 2", "[]", 1,
			&fixed{reward: 0, info: map[string]any{env.InfoPyRows: "[]"}}, env.DisagreeGoldThere},
		{"bash: the clock", "bash", "date +%s", "1688000000\n", 1, &fixed{obs: "1765000000\n", reward: 0}, env.DisagreeMachine},
		{"bash: a time limit on one side", "bash", "find / -name x", "/x\n", 1, &fixed{obs: "Command timed out", reward: 0}, env.DisagreeMachine},
		{"bash: the network", "bash", "curl -s example.com | wc -c", "1256\n", 1,
			&fixed{obs: "curl: (6) Could not resolve host: example.com\n", reward: 0}, env.DisagreeNetwork},
		{"bash: unexplained", "bash", "ls /testbed", "a\n", 1, &fixed{obs: "b\n", reward: 0}, env.DisagreeOurs},
		{"sql: a tied cut", "sql", "SELECT a FROM t GROUP BY a ORDER BY count(*) DESC LIMIT 1", "| 2 |", 0,
			&fixed{obs: "| 3 |", reward: 1, info: map[string]any{env.InfoTies: 2}}, env.DisagreeTie},
		{"sql: a gold that does not run here", "sql", "SELECT 1", "| 1 |", 0,
			&fixed{obs: "| 1 |", reward: 1, info: map[string]any{env.InfoGoldError: "1064 (42000)"}}, env.DisagreeGold},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := env.Trajectory{Environment: env.ICName(c.envName), TaskID: 7}
			tr.TurnHistory.Actions = []string{c.action}
			tr.TurnHistory.Observations = []string{c.loggedObs}
			tr.TurnHistory.Rewards = []float64{c.logged}
			tr.Summary.MaxReward = c.logged
			res, err := env.Replay(context.Background(), c.e, c.envName, tr)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Steps) != 1 || res.Steps[0].Agree || res.Steps[0].Cause != c.want {
				t.Fatalf("steps %+v, want one disagreeing step of cause %s", res.Steps, c.want)
			}
			if res.LoggedSuccess == res.OurSuccess || res.Cause != c.want {
				t.Errorf("success logged %v ours %v cause %q, want a disagreement of cause %s", res.LoggedSuccess, res.OurSuccess, res.Cause, c.want)
			}
			if env.Unreproducible(c.want) == (c.want == env.DisagreeOurs) {
				t.Errorf("Unreproducible(%s) = %v", c.want, env.Unreproducible(c.want))
			}
		})
	}
}

// TestCheckGoldCauses: a gold that does not score 1 against itself is
// given its cause.
func TestCheckGoldCauses(t *testing.T) {
	cases := []struct {
		name, envName, gold string
		e                   *fixed
		pass                bool
		cause               string
		ties                int
	}{
		{"passes", "bash", "ls", &fixed{obs: "a\n", reward: 1}, true, "", 0},
		{"ambiguous but passes", "sql", "SELECT a FROM t ORDER BY b LIMIT 1", &fixed{reward: 1, info: map[string]any{env.InfoTies: 3}}, true, "", 3},
		{"sql gold does not run", "sql", "SELECT avg(Attendance) FROM SHOW", &fixed{reward: 0, info: map[string]any{env.InfoGoldError: "1064 (42000): syntax"}}, false, env.CauseGoldError, 0},
		{"network", "bash", "curl -s example.com", &fixed{obs: "curl: (6) Could not resolve host: example.com\n", reward: 0.5}, false, env.CauseNetwork, 0},
		{"timeout", "bash", "sleep 99", &fixed{obs: "[execution timed out]", reward: 0}, false, env.CauseTimeout, 0},
		{"clock", "bash", "date; ls", &fixed{obs: "Fri\n", reward: 0.9}, false, env.CauseMachine, 0},
		{"host name", "bash", "env", &fixed{obs: "HOSTNAME=1\n", reward: 0.99}, false, env.CauseMachine, 0},
		{"anything else", "bash", "cat x", &fixed{obs: "y\n", reward: 0.5}, false, env.CauseDiffers, 0},
	}
	for _, c := range cases {
		gc, err := env.CheckGold(context.Background(), c.e, env.Task{ID: "t/1", Env: c.envName, Gold: c.gold})
		if err != nil {
			t.Fatal(err)
		}
		if gc.Pass != c.pass || gc.Cause != c.cause || gc.Ties != c.ties {
			t.Errorf("%s: pass %v cause %q ties %d, want %v %q %d", c.name, gc.Pass, gc.Cause, gc.Ties, c.pass, c.cause, c.ties)
		}
	}
}
