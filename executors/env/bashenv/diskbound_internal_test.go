package bashenv

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codefeedback/codefeedback/executors/env"
	"github.com/codefeedback/codefeedback/executors/env/envtest"
)

// usage is what a replica holds on the host.
type usage struct{ bytes, entries int64 }

func (u usage) String() string {
	return fmt.Sprintf("%.1f MiB in %d entries", float64(u.bytes)/(1<<20), u.entries)
}

// measure walks a replica on the host: allocated bytes (st_blocks, so a
// sparse file counts what it holds) and entries below dir.
func measure(t *testing.T, dir string) usage {
	t.Helper()
	var u usage
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if p != dir {
			u.entries++
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok && !d.IsDir() {
			u.bytes += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		t.Fatalf("measuring %s: %v", dir, err)
	}
	return u
}

// Attack sizes: each byte action starts attackProcs processes that each
// write attackFiles files of attackFile bytes (within RLIMIT_FSIZE), so no
// single process or file is large; attackActions such actions follow each
// other in one episode. In another episode one action makes attackInodes
// empty files from 4 processes. The bound under test is far below what
// they attempt.
const (
	attackProcs   = 8
	attackFiles   = 8
	attackFile    = 2 << 20
	attackActions = 4
	attackInodes  = 12000
	testDisk      = 32 << 20
	testInodes    = 4096
)

// attackScript is one byte action: the processes write into dirs in turn
// (a task path, and / where it is the replica).
func attackScript(k int, dirs []string) string {
	var b strings.Builder
	for p := 0; p < attackProcs; p++ {
		d := dirs[p%len(dirs)]
		fmt.Fprintf(&b, "(for i in $(seq %d); do head -c %d /dev/zero > %s/junk.%d.%d.$i || exit; done) & ", attackFiles, attackFile, d, k, p)
	}
	fmt.Fprintf(&b, "wait; echo attack %d done", k)
	return b.String()
}

// inodeScript makes attackInodes empty files below dir from 4 processes.
func inodeScript(dir string) string {
	var b strings.Builder
	for p := 0; p < 4; p++ {
		fmt.Fprintf(&b, "(mkdir -p %s/many%d && cd %s/many%d && for i in $(seq %d); do : > f$i || exit; done) & ", dir, p, dir, p, attackInodes/4)
	}
	b.WriteString("wait; echo inodes done")
	return b.String()
}

// attack runs the byte actions (or, with inodes, the inode action) in the
// current episode and returns what landed in replica dir on the host and
// the observations.
func attack(t *testing.T, e env.Env, dir string, targets []string, inodes bool) (usage, []string) {
	t.Helper()
	ctx := context.Background()
	before := measure(t, dir)
	var obs []string
	actions := []string{inodeScript(targets[0])}
	if !inodes {
		actions = nil
		for k := 0; k < attackActions; k++ {
			actions = append(actions, attackScript(k, targets))
		}
	}
	for _, a := range actions {
		r, err := e.Step(ctx, a)
		if err != nil {
			t.Fatalf("attack action: %v", err)
		}
		obs = append(obs, r.Observation)
	}
	after := measure(t, dir)
	grown := usage{after.bytes - before.bytes, after.entries - before.entries}
	what := fmt.Sprintf("%d MiB in %d files from %d processes in %d actions", attackActions*attackProcs*attackFiles*attackFile>>20,
		attackActions*attackProcs*attackFiles, attackProcs, attackActions)
	if inodes {
		what = fmt.Sprintf("%d empty files from 4 processes", attackInodes)
	}
	t.Logf("attempted %s; landed on the host: %s (replica before: %s; bound %d MiB, %d inodes)", what, grown, before, testDisk>>20, testInodes)
	return grown, obs
}

// extentSlack is ext4's extent-tree blocks: st_blocks counts them with a
// file's data, and files written by many processes at once fragment into
// more extents than an inode holds (one run under load measured 4 KiB past
// the area's slack).
const extentSlack = 64 << 10

// checkBound asserts the attack stayed within the bound (plus the area's
// slack, ext4's extent blocks, and its rounding of inodes to a whole table
// block) and said so.
func checkBound(t *testing.T, grown usage, obs []string) {
	t.Helper()
	if grown.bytes > testDisk+areaSlackBytes+extentSlack {
		t.Errorf("the attack landed %d KiB on the host; bound %d KiB", grown.bytes>>10, testDisk>>10)
	}
	if grown.entries > testInodes+areaSlackInodes+15 {
		t.Errorf("the attack made %d entries on the host; bound %d", grown.entries, testInodes)
	}
	if full := strings.Join(obs, "\n"); !strings.Contains(full, "No space left on device") {
		t.Errorf("no observation says the replica is full: %q", clip(full, 600))
	}
}

// skipUnbounded skips where this process cannot mount areas: there the
// bound is per file only (scratch.go), and the attack would fill the disk.
func skipUnbounded(t *testing.T, s *scratch) {
	t.Helper()
	p, err := s.area("probe")
	if err != nil {
		t.Fatal(err)
	}
	defer s.release(p)
	if s.kind() == fsPlain {
		t.Skip("cannot mount a sized file system here (not root?): replicas are bounded per file only")
	}
	t.Logf("replicas on %s", s.kind())
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// solveStep is an action of an episode after an attack and what its
// observation must hold.
type solveStep struct{ action, want string }

// checkEpisodesBounded runs the attacks in e, reset to task, whose bounded
// directory is dir on the host: the byte attack is refused with ENOSPC and
// the episode goes on (solve, cleaning up first, then submit scores 1, as
// compared on the host); the inode attack, left in place, leaves nothing
// for the next episode, which starts clean and scores 1 again.
func checkEpisodesBounded(t *testing.T, e env.Env, task env.Task, dir string, targets []string, solve []solveStep, submit string) {
	t.Helper()
	ctx := context.Background()
	play := func(when string) {
		t.Helper()
		for _, s := range solve {
			if r, err := e.Step(ctx, s.action); err != nil || !strings.Contains(r.Observation, s.want) {
				t.Fatalf("%s: %s: %+v, %v; want %q in the observation", when, s.action, r, err, s.want)
			}
		}
		if r, err := e.Step(ctx, submit); err != nil || r.Reward != 1 {
			t.Errorf("%s: %s: reward %v (%+v), %v; want 1", when, submit, r.Reward, r.Info["reward"], err)
		}
	}
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	clean := measure(t, dir)
	grown, obs := attack(t, e, dir, targets, false)
	checkBound(t, grown, obs)
	play("after the attack")

	// Use up the inodes and leave it all: the next episode is clean.
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	grown, obs = attack(t, e, dir, targets, true)
	checkBound(t, grown, obs)
	if _, err := e.Reset(ctx, task); err != nil {
		t.Fatal(err)
	}
	if got := measure(t, dir); got != clean {
		t.Errorf("after a reset the bounded directory holds %s; a fresh one %s", got, clean)
	}
	play("in the episode after a full one")
}

// An agent that splits its writes across processes and actions cannot put
// more than the bound on the host's disk or memory: the replica is full
// (ENOSPC in the observation), the episode goes on and scores as usual,
// and the next episode starts clean.
func TestReplicaDiskBound(t *testing.T) {
	task := envtest.Tasks(t, "testdata/nl2bash_fs_1.json")[1] // gold: echo x > /testbed/new.txt
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		if d.Ex.Info().DiskBytes <= 0 {
			t.Errorf("%s does not report its disk size: the default bound would not follow disk=/tmp=", d.Name)
		}
		for _, shell := range []string{ShellSession, ShellInterCode} {
			t.Run(shell, func(t *testing.T) {
				e, err := New(d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{
					"shell": shell, "disk": fmt.Sprint(testDisk), "inodes": fmt.Sprint(testInodes)}})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				skipUnbounded(t, e.scratch)
				// The replica's directory is known once an episode has one.
				if _, err := e.Reset(context.Background(), task); err != nil {
					t.Fatal(err)
				}
				targets := []string{"/testbed"}
				if e.cur.root {
					targets = append(targets, "") // the root replica's /
				}
				checkEpisodesBounded(t, e, task, e.agent.rep.dir, targets,
					[]solveStep{{"rm -rf /testbed/junk.* /junk.*; echo cleaned", "cleaned"}, {task.Gold, ""}}, "submit")
			})
		}
	})
}

// The CTF environment's task directory is bounded the same way.
func TestCTFDiskBound(t *testing.T) {
	task := envtest.Tasks(t, "testdata/ctf/ic_ctf.json")[0]
	envtest.EachCTF(t, func(t *testing.T, d envtest.Driver) {
		c, err := NewCTF(d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{
			"disk": fmt.Sprint(testDisk), "inodes": fmt.Sprint(testInodes)}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		skipUnbounded(t, c.scratch)
		if _, err := c.Reset(context.Background(), task); err != nil {
			t.Fatal(err)
		}
		checkEpisodesBounded(t, c, task, c.sd.rep.dir, []string{"."},
			[]solveStep{{"rm -rf junk.*; python3 reveal.py", task.Gold}}, "submit "+task.Gold)
	})
}
