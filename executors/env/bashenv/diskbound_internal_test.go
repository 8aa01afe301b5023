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

// An agent that splits its writes across processes and actions cannot put
// more than the bound on the host's disk or memory: the replica is full
// (ENOSPC in the observation), the episode goes on and scores as usual,
// and the next episode starts clean.
func TestReplicaDiskBound(t *testing.T) {
	tasks, err := env.LoadTasks("testdata/nl2bash_fs_1.json", "")
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[1] // gold: echo x > /testbed/new.txt
	envtest.Each(t, func(t *testing.T, d envtest.Driver) {
		if d.Ex.Info().DiskBytes <= 0 {
			t.Errorf("%s does not report its disk size: the default bound would not follow disk=/tmp=", d.Name)
		}
		for _, shell := range []string{ShellSession, ShellInterCode} {
			t.Run(shell, func(t *testing.T) {
				ctx := context.Background()
				e, err := New(d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{
					"shell": shell, "disk": fmt.Sprint(testDisk), "inodes": fmt.Sprint(testInodes)}})
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				skipUnbounded(t, e.scratch)
				if _, err := e.Reset(ctx, task); err != nil {
					t.Fatal(err)
				}
				dir := e.agent.rep.dir
				clean := measure(t, dir)
				targets := []string{"/testbed"}
				if e.cur.root {
					targets = append(targets, "") // the root replica's /
				}
				grown, obs := attack(t, e, dir, targets, false)
				checkBound(t, grown, obs)

				// The episode goes on: the agent cleans up, does the task
				// and the reward (compared on the host) is the gold's.
				if r, err := e.Step(ctx, "rm -rf /testbed/junk.* /junk.*; echo cleaned"); err != nil || !strings.Contains(r.Observation, "cleaned") {
					t.Fatalf("cleaning up: %+v, %v", r, err)
				}
				if _, err := e.Step(ctx, task.Gold); err != nil {
					t.Fatal(err)
				}
				if r, err := e.Step(ctx, "submit"); err != nil || r.Reward != 1 {
					t.Errorf("gold after the attack: reward %v (%+v), %v", r.Reward, r.Info["reward"], err)
				}

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
					t.Errorf("after a reset the replica holds %s; a fresh one %s", got, clean)
				}
				if _, err := e.Step(ctx, task.Gold); err != nil {
					t.Fatal(err)
				}
				if r, err := e.Step(ctx, "submit"); err != nil || r.Reward != 1 {
					t.Errorf("gold in the episode after a full replica: reward %v (%+v), %v", r.Reward, r.Info["reward"], err)
				}
			})
		}
	})
}

// The CTF environment's task directory is bounded the same way.
func TestCTFDiskBound(t *testing.T) {
	tasks, err := env.LoadTasks("testdata/ctf/ic_ctf.json", "")
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[0]
	envtest.EachCTF(t, func(t *testing.T, d envtest.Driver) {
		ctx := context.Background()
		c, err := NewCTF(d.Ex, env.Options{CacheDir: t.TempDir(), Params: map[string]string{
			"disk": fmt.Sprint(testDisk), "inodes": fmt.Sprint(testInodes)}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		skipUnbounded(t, c.scratch)
		if _, err := c.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		dir := c.sd.rep.dir
		clean := measure(t, dir)
		grown, obs := attack(t, c, dir, []string{"."}, false)
		checkBound(t, grown, obs)
		if r, err := c.Step(ctx, "rm -rf junk.*; python3 reveal.py"); err != nil || !strings.Contains(r.Observation, task.Gold) {
			t.Errorf("solving after the attack: %+v, %v", r, err)
		}
		if r, err := c.Step(ctx, "submit "+task.Gold); err != nil || r.Reward != 1 {
			t.Errorf("gold flag after the attack: %+v, %v", r, err)
		}
		if _, err := c.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		grown, obs = attack(t, c, dir, []string{"."}, true)
		checkBound(t, grown, obs)
		if _, err := c.Reset(ctx, task); err != nil {
			t.Fatal(err)
		}
		if got := measure(t, dir); got != clean {
			t.Errorf("after a reset the task directory holds %s; a fresh one %s", got, clean)
		}
	})
}
