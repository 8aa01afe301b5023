package bashenv_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/bashenv"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

func loadFixture(t *testing.T) []env.Task {
	t.Helper()
	tasks := envtest.Tasks(t, "testdata/nl2bash_fs_1.json")
	if len(tasks) != 8 || tasks[6].Gold != "cd /testbed;find . -name '*.txt' | wc -l" || tasks[0].Setup[env.SetupFS] != "fs_1" {
		t.Fatalf("loaded %d tasks, gold 6 %q, fs %q", len(tasks), tasks[6].Gold, tasks[0].Setup[env.SetupFS])
	}
	return tasks
}

// ruleCases test a reward rule, not the sandbox: they run on the first driver only.
var ruleCases = map[string]bool{
	"other commands, same effect":                   true,
	"wrong output, no changes":                      true,
	"right file, wrong content":                     true,
	"missing change":                                true,
	"extra change":                                  true,
	"wrong file deleted":                            true,
	"modified instead of deleted":                   true,
	"submit before acting: the query is the output": true,
}

func TestTaskPaths(t *testing.T) {
	cases := []struct{ script, want string }{
		{"rm -rf /testbed/\nmkdir -p /testbed/a\necho x > /index.html", "testbed"},
		{"mkdir -p /workspace/x\nmkdir -p /backup\ndd if=/dev/zero of=/workspace/f", "backup workspace"},
		{"export file_system_version=4\n# Folders\nbin\n", ""},
		{"echo hi > /tmp/x; cat /etc/passwd; ls /usr/bin", ""},
	}
	for _, c := range cases {
		if got := strings.Join(bashenv.TaskPaths(c.script), " "); got != c.want {
			t.Errorf("TaskPaths(%q) = %q, want %q", c.script, got, c.want)
		}
	}
}

func TestTFIDF(t *testing.T) {
	cases := []struct {
		a, b string
		want float64
	}{
		{"hello world", "hello world", 1},
		{"hello world", "Hello there", 1 / (1 + math.Pow(math.Log(1.5)+1, 2))},
		{"", "", 1},
		{"a", "b", 0},   // no token of two characters: exact equality
		{"x", "x", 1},   //
		{"", "word", 0}, //
	}
	for _, c := range cases {
		if got := bashenv.TFIDFSimilarity(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("TFIDFSimilarity(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// Rewards by InterCode's rule: 0.01 + file diff (0.33 * (1-erf(miss+extra)))
// + content of common added files (0.33 * share equal; 0.33 if none)
// + 0.33 * TF-IDF similarity of the outputs, each part rounded to 2 places.
func TestRewardRules(t *testing.T) {
	tasks := loadFixture(t)
	erf1 := math.Round(0.33*(1-math.Erf(1))*100) / 100 // 0.05
	cases := []struct {
		name    string
		task    int
		actions []string
		want    float64
	}{
		{"gold: output", 0, []string{tasks[0].Gold}, 1},
		{"gold: new file", 1, []string{tasks[1].Gold}, 1},
		{"gold: delete", 2, []string{tasks[2].Gold}, 1},
		{"gold: modify", 3, []string{tasks[3].Gold}, 1},
		{"gold: new directory", 4, []string{tasks[4].Gold}, 1},
		{"gold: chmod", 5, []string{tasks[5].Gold}, 1},
		{"gold: list of commands", 6, []string{tasks[6].Gold}, 1},
		{"gold: copy from another task path", 7, []string{tasks[7].Gold}, 1},
		{"other commands, same effect", 4, []string{"cd /testbed", "mkdir d3", "printf 'z\\n' > d3/z.txt"}, 1},
		{"wrong output, no changes", 0, []string{"echo nothing"}, 0.01 + 0.33 + 0.33},
		{"right file, wrong content", 1, []string{"echo y > /testbed/new.txt"}, 0.01 + 0.33 + 0 + 0.33},
		{"missing change", 1, []string{"true"}, 0.01 + erf1 + 0.33 + 0.33},
		{"extra change", 0, []string{"touch /testbed/extra", "cat /testbed/dir1/a.txt"}, 0.01 + erf1 + 0.33 + 0.33},
		{"wrong file deleted", 2, []string{"rm /testbed/dir1/a.txt"}, 0.01 + 0 + 0.33 + 0.33},
		{"modified instead of deleted", 2, []string{"echo x > /testbed/dir1/sub/b.txt"}, 0.01 + 0 + 0.33 + 0.33},
		// /tmp is the sandbox's own on every driver; /new.txt is an extra
		// change where / is a replica (bwrap), refused where it is not.
		{"writes outside the task paths", 1, []string{"echo x > /tmp/new.txt", "echo x > /new.txt", "true"}, -1},
		{"symlink instead of content", 1, []string{"ln -s /tmp/x /testbed/new.txt"}, 0.01 + 0.33 + 0 + 0.33},
		{"submit before acting: the query is the output", 0, nil, 0.01 + 0.33 + 0.33 + math.Round(0.33*bashenv.TFIDFSimilarity(tasks[0].Query, "Hello, World!\n")*100)/100},
	}
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir()})
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if ruleCases[c.name] {
					envtest.RuleOnly(t, d, "bwrap")
				}
				_, r := envtest.Play(t, e, tasks[c.task], c.actions, "submit")
				want := c.want
				if want < 0 { // the one case that depends on a writable /
					want = 0.01 + erf1 + 0.33 + 0.33
					if rootReplica(d) {
						want = 0.01 + 0 + 0.33 + 0.33 // missing testbed/new.txt, extra new.txt
					}
				}
				if math.Abs(r.Reward-want) > 1e-9 || !r.Done {
					t.Errorf("got reward %v (%+v), want %v", r.Reward, r.Info["reward"], want)
				}
			})
		}
	})
}

// Each episode starts from the pristine file system, whatever the last one
// did to it (including writes that put the modification time back).
func TestFreshFileSystem(t *testing.T) {
	tasks := loadFixture(t)
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir()})
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		for _, a := range []string{
			"m=$(stat -c %y /testbed/dir1/a.txt); echo tampered > /testbed/dir1/a.txt; touch -d \"$m\" /testbed/dir1/a.txt",
			"rm -r /testbed/dir1/sub; mkdir /testbed/junk; echo j > /testbed/junk/j; chmod 000 /testbed/dir2; echo x > /backup/keep.txt",
		} {
			if r, err := e.Step(ctx, a); err != nil || !r.Valid {
				t.Fatalf("Step(%q): %+v, %v", a, r, err)
			}
		}
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		r, err := e.Step(ctx, "pwd; cat /testbed/dir1/a.txt /testbed/dir1/sub/b.txt /backup/keep.txt; ls /testbed; ls -l /testbed/dir2 | tail -1 | cut -c1-10; stat -c %y /testbed/old.txt")
		if err != nil {
			t.Fatal(err)
		}
		// /testbed/empty is gone: InterCode's reset (git clean -fd) removes
		// directories that hold no file.
		want := "/\nHello, World!\nsecond file\nbackup copy\ndir1\ndir2\nold.txt\n-rwxr-xr-x\n2023-05-31 23:59:59"
		if !strings.HasPrefix(r.Observation, want) {
			t.Errorf("after Reset: got\n%s\nwant prefix\n%s", r.Observation, want)
		}
		if !rootReplica(d) {
			// / itself and /index.html are not task paths: read-only, absent.
			r, err = e.Step(ctx, "touch /x; ls /index.html")
			if err != nil || r.Valid || !strings.Contains(r.Observation, "Read-only file system") {
				t.Errorf("writing /x: %+v, %v; want a read-only error", r, err)
			}
			return
		}
		// / is the episode's replica: the setup script's /index.html is
		// there, and what an episode adds to / is gone in the next.
		for _, a := range []string{"cat /index.html", "touch /x; ln -s /testbed /lnk; mkdir /root/r; echo gone > /index.html"} {
			if r, err := e.Step(ctx, a); err != nil || !r.Valid {
				t.Fatalf("Step(%q): %+v, %v", a, r, err)
			}
		}
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		r, err = e.Step(ctx, "cat /index.html; ls -A / | grep -v -x -e bin -e sbin -e lib -e lib64 -e usr -e proc -e dev -e tmp -e etc -e sys | tr '\\n' ' '; ls -A /root")
		if want := "<html></html>\nbackup boot home index.html media mnt opt root run srv testbed var "; err != nil || r.Observation != want {
			t.Errorf("after Reset: / holds %q, want %q (%v)", r.Observation, want, err)
		}
	})
}

// rootReplica: the driver mounts a replica as the sandbox's / (bwrap), so
// writes into / are the episode's and count as changes.
func rootReplica(d envtest.Driver) bool { return d.Name == "bwrap" }

// Writes into / land in the episode's replica: the reward sees them on
// both sides (a gold that links into /), they never reach the host's / or
// /usr, and the next episode does not see them.
func TestWritableRoot(t *testing.T) {
	tasks := loadFixture(t)
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		if !rootReplica(d) {
			t.Skipf("%s: / is the image's, read-only", d.Name)
		}
		ctx := context.Background()
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir()})
		mark := fmt.Sprintf("cf-root-%d", time.Now().UnixNano())
		task := env.Task{ID: "link-into-root", Query: "Link /testbed/dir1 into /", Gold: "ln -s /testbed/dir1 /", Setup: tasks[0].Setup}
		erf1 := math.Round(0.33*(1-math.Erf(1))*100) / 100
		for _, c := range []struct {
			name    string
			actions []string
			want    float64
		}{
			{"gold", []string{"ln -s /testbed/dir1 /"}, 1},
			{"same name, other target", []string{"cd / && ln -s testbed/dir1 dir1"}, 0.01 + 0.33 + 0 + 0.33},
			{"nothing", []string{"true"}, 0.01 + erf1 + 0.33 + 0.33},
			{"link plus a stray file in /", []string{"ln -s /testbed/dir1 /", "touch /" + mark}, 0.01 + erf1 + 0.33 + 0.33},
			{"link plus writes to /usr, /etc, /tmp", []string{"ln -s /testbed/dir1 /", "touch /usr/bin/" + mark + " /etc/" + mark + " /tmp/" + mark, "true"}, 1},
		} {
			t.Run(c.name, func(t *testing.T) {
				if _, err := e.Reset(ctx, task); err != nil {
					t.Fatal(err)
				}
				if r, err := e.Step(ctx, "ls -A / | grep -c -e dir1 -e "+mark); err != nil || r.Observation != "0\n" {
					t.Fatalf("fresh / holds what an earlier episode wrote: %q, %v", r.Observation, err)
				}
				for _, a := range c.actions {
					if _, err := e.Step(ctx, a); err != nil {
						t.Fatal(err)
					}
				}
				r, err := e.Step(ctx, "submit")
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(r.Reward-c.want) > 1e-9 {
					t.Errorf("reward %v (%+v), want %v", r.Reward, r.Info["reward"], c.want)
				}
			})
		}
		for _, p := range []string{"/" + mark, "/usr/bin/" + mark, "/etc/" + mark, "/tmp/" + mark} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("an episode wrote the host's %s", p)
			}
		}
	})
}

// shell: intercode runs each action as InterCode did (see intercode.go):
// its quoting, only cd carried over, docker's error for a directory that a
// non-path cd left behind. Each step's observation is InterCode's logged one.
func TestInterCodeShell(t *testing.T) {
	tasks := loadFixture(t)
	steps := []struct {
		action, obs string
		valid       bool
	}{
		{`echo " hello world;876 " | tr -cd ';0-9'`, "\n", true}, // bash -c 'echo ' hello ...
		{`x=1; echo "$x"`, "1\n", true},
		{`echo $x`, "\n", true}, // no shell state between actions
		{`echo "don't"`, "Malformed command", false},
		{`cd testbed/dir1`, "", true},
		{`cat a.txt`, "Hello, World!\n", true},
		{`cd ..`, "", true},
		{`pwd`, "/testbed\n", true},
		{`cd nowhere`, "/bin/bash: line 1: cd: /testbed/nowhere: No such file or directory\n", false},
		{`pwd`, "/testbed\n", true},
		{`cd /testbed && true`, "", true}, // the whole argument becomes the directory
		{`pwd`, `OCI runtime exec failed: exec failed: unable to start container process: chdir to cwd ("/testbed && true") set in config.json failed: no such file or directory: unknown` + "\r\n", false},
		{`cd /testbed/dir1`, "", true},
		{`ls`, "a.txt\nsub\n", true},
		// docker exec read until the last writer was gone: a job left in
		// the background still prints into the step's output.
		{`(sleep 0.3; echo late) &`, "late\n", true},
		// The container's environment (docker's and the image's ENV), not
		// the runner's; the host name stands for a container id, HOME is
		// /tmp where the sandbox's user is not root (docker), and SHLVL is
		// 0 under bash 5.1 (InterCode's, as logged; the nl2bash root's),
		// 1 under 5.2.
		{`env | sort | sed 's/^HOSTNAME=[0-9a-f]\{12\}$/HOSTNAME=id/; s/^HOME=\/tmp$/HOME=\/root/; s/^SHLVL=[01]$/SHLVL=n/'`, "HOME=/root\nHOSTNAME=id\nPATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\nPWD=/testbed/dir1\nSHLVL=n\n_=/usr/bin/env\nfile_system_version=1\nscript=setup_nl2b_fs_1.sh\n", true},
	}
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{"shell": "intercode"}})
		if _, err := e.Reset(ctx, tasks[0]); err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			r, err := e.Step(ctx, s.action)
			if err != nil {
				t.Fatal(err)
			}
			if r.Observation != s.obs || r.Valid != s.valid {
				t.Errorf("Step(%q) = %q valid %v; want %q valid %v", s.action, r.Observation, r.Valid, s.obs, s.valid)
			}
		}
		// The gold runs through the same quoting: the gold command of task 6
		// (a list) is joined with ";" and scores 1 by itself.
		if _, r := envtest.Play(t, e, tasks[6], []string{"cd /testbed;find . -name '*.txt' | wc -l"}, "submit"); r.Reward != 1 {
			t.Errorf("gold in intercode shell: reward %v (%+v)", r.Reward, r.Info["reward"])
		}
	})
}

// Several environments sharing a cache build a file-system variant at the
// same time (intercode run's workers do): each gets the whole template.
func TestConcurrentBuilds(t *testing.T) {
	tasks := loadFixture(t)
	d := envtest.Drivers(t)[0]
	ctx := context.Background()
	cache := t.TempDir()
	errs := make(chan error, 3)
	for i := 0; i < cap(errs); i++ {
		go func() {
			e, err := env.Open(ctx, "bash", d.Ex, env.Options{CacheDir: cache})
			if err != nil {
				errs <- err
				return
			}
			defer e.Close()
			if _, err := e.Reset(ctx, tasks[0]); err != nil {
				errs <- err
				return
			}
			r, err := e.Step(ctx, "cat /testbed/dir1/a.txt /backup/keep.txt")
			if err == nil && r.Observation != "Hello, World!\nbackup copy\n" {
				err = fmt.Errorf("fresh file system reads %q", r.Observation)
			}
			errs <- err
		}()
	}
	for i := 0; i < cap(errs); i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A ReAct log (InterCode's eval_react.py format: thoughts, execute[CODE]
// actions, only submit scored) replays step by step and our re-execution
// keeps the thoughts.
func TestReplayReAct(t *testing.T) {
	tasks := loadFixture(t)
	d := envtest.Drivers(t)[0]
	ctx := context.Background()
	e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{"shell": "intercode"}})
	tr := env.Trajectory{Environment: "ic_bash", TaskID: 0, Query: tasks[0].Query, TurnHistory: env.TurnHistory{
		Thoughts:     []string{"Look at the file.", "That is it.", "Done."},
		Actions:      []string{"execute[cat /testbed/dir1/a.txt]", "I would like to submit", "submit"},
		Observations: []string{"Hello, World!\n", "", "Hello, World!\n"},
		Rewards:      []float64{0, 0, 1},
	}, Summary: env.Summary{MaxReward: 1}}
	if _, err := e.Reset(ctx, tasks[0]); err != nil {
		t.Fatal(err)
	}
	res, err := env.Replay(ctx, e, "bash", tr)
	if err != nil {
		t.Fatal(err)
	}
	var ours []float64
	for _, s := range res.Steps {
		ours = append(ours, s.Ours)
		if !s.Agree {
			t.Errorf("step %q: logged %v, ours %v", s.Action, s.Logged, s.Ours)
		}
	}
	if len(ours) != 3 || ours[2] != 1 || !res.OurSuccess {
		t.Errorf("rewards %v, success %v; want [0 0 1], true", ours, res.OurSuccess)
	}
	if got := res.Ours.TurnHistory.Thoughts; strings.Join(got, "|") != strings.Join(tr.TurnHistory.Thoughts, "|") {
		t.Errorf("our log's thoughts = %q", got)
	}
}

// TestSessionEnv: our persistent shell has the container's environment
// too, from the first command of each episode: nothing of the runner's
// (its scratch HOME, TMPDIR, Python settings) reaches the agent.
func TestSessionEnv(t *testing.T) {
	tasks := loadFixture(t)
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir()})
		for i := 0; i < 2; i++ {
			if _, err := e.Reset(ctx, tasks[0]); err != nil {
				t.Fatal(err)
			}
			r, err := e.Step(ctx, `export X=1; cd; pwd; echo "${TMPDIR-none} ${PYTHONHASHSEED-none} $file_system_version"; env | grep -c /tmp/cf`)
			if err != nil {
				t.Fatal(err)
			}
			// Root's home where the replica is / (bwrap), else /tmp.
			home := map[string]string{"bwrap": "/root", "docker": "/tmp"}[d.Name]
			if want := home + "\nnone none 1\n0\n"; r.Observation != want {
				t.Errorf("episode %d: %q, want %q", i, r.Observation, want)
			}
			if r, err = e.Step(ctx, `echo "$X $(pwd)"`); err != nil || r.Observation != "1 "+home+"\n" {
				t.Errorf("episode %d: the session kept %q, want \"1 %s\" (%v)", i, r.Observation, home, err)
			}
			// bash's errors count the agent's lines, not the set-up's.
			if r, err = e.Step(ctx, "no_such_command_x"); err != nil || r.Observation != "/bin/bash: line 1: no_such_command_x: command not found\n" {
				t.Errorf("episode %d: an unknown command printed %q (%v)", i, r.Observation, err)
			}
			// ps shows the runner's command line, not its source.
			if r, err = e.Step(ctx, `for f in /proc/[0-9]*/cmdline; do tr -d '\0' < $f | wc -c; done | sort -n | tail -n 1`); err != nil || len(r.Observation) > 4 {
				t.Errorf("episode %d: the longest command line has %q characters, want under 1000 (%v)", i, r.Observation, err)
			}
		}
	})
}

// TestGoldsPassThemselves: every gold played as the agent's action scores
// 1, including golds that print the files' times or owners or archive
// them: the agent's and the gold's replicas get the same file times (they
// were dated by when each side's sandbox opened, so `%T@` differed) and,
// on every driver, the same owner (on docker each sandbox had a user of
// its own, so tar tv and ls -l golds scored 0.5-0.85 against themselves).
func TestGoldsPassThemselves(t *testing.T) {
	tasks := loadFixture(t)
	timed := tasks[0]
	for _, g := range []string{
		"find /testbed -printf '%T@ %p\\n' | sort",
		"tar czf /testbed/all.tgz -C /testbed dir1 dir2 && tar tvzf /testbed/all.tgz | sort",
		"ls -l --time-style=full-iso /testbed/dir1",
		"ls -ln /testbed/dir1 /testbed/dir2",
	} {
		timed.Gold, timed.ID = g, "timed/"+g
		tasks = append(tasks, timed)
	}
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		e := envtest.Open(t, "bash", d.Ex, env.Options{CacheDir: t.TempDir()})
		for _, task := range tasks {
			gc, err := env.CheckGold(ctx, e, task)
			if err != nil {
				t.Fatal(err)
			}
			if !gc.Pass {
				t.Errorf("%s: gold %q scores %v against itself (%s: %s)", task.ID, task.Gold, gc.Reward, gc.Cause, gc.Detail)
			}
		}
	})
}
