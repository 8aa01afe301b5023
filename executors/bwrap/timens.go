package bwrap

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Uptime is what a sandbox's /proc/uptime (uptime, w, top) reads when it
// starts: its own clock, not the host's. The host's uptime tells code when
// the host booted, and output that prints it differed from machine to
// machine: InterCode's fs_4 task 25 reads the load average as `uptime`'s
// 10th field, which is the 1-minute figure on a host up for days and the
// 15-minute one on a host up for hours, so a replay's reward followed the
// host. A day and three hours gives the common "up 1 day, 3:00" form.
//
// It needs a time namespace (Linux 5.6, util-linux's unshare --time), made
// as root before bwrap starts: bwrap cannot make one and a slot's uid may
// not. Without root, or where the probe fails, sandboxes read the host's
// uptime (and the launcher logs it once); docker has no time namespaces.
const Uptime = 27 * time.Hour

// timeNS is how to start bwrap in a time namespace of its own, as root,
// dropping to the slot's uid: unshare writes the boot-time offset, setpriv
// changes the ids and sets the parent-death signal again (a credential
// change clears the one the launcher set).
type timeNS struct {
	unshare, setpriv string
}

var (
	timeNSOnce  sync.Once
	timeNSTools *timeNS
)

// probeTimeNS finds unshare and setpriv and checks, once per process, that
// a time namespace with a boot-time offset can be made here.
func probeTimeNS() *timeNS {
	timeNSOnce.Do(func() {
		t, err := findTimeNS()
		if err != nil {
			log.Printf("bwrap: sandboxes read the host's uptime: %v", err)
			return
		}
		timeNSTools = t
	})
	return timeNSTools
}

func findTimeNS() (*timeNS, error) {
	u, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("no unshare (util-linux): %w", err)
	}
	s, err := exec.LookPath("setpriv")
	if err != nil {
		return nil, fmt.Errorf("no setpriv (util-linux): %w", err)
	}
	t := &timeNS{unshare: u, setpriv: s}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv := t.wrap(Uptime, 65534, []string{"cat", "/proc/uptime"})
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("no time namespace (%s): %w", strings.TrimSpace(string(out)), err)
	}
	up, err := parseUptime(string(out))
	if err != nil || up < Uptime || up > Uptime+time.Minute {
		return nil, fmt.Errorf("a time namespace's uptime read %q", strings.TrimSpace(string(out)))
	}
	return t, nil
}

// wrap returns argv run in a new time namespace whose uptime starts at
// uptime, as uid:uid with no supplementary groups.
func (t *timeNS) wrap(uptime time.Duration, uid int, argv []string) []string {
	// Whole seconds, rounded up: the sandbox never reads less than uptime.
	off := int64((uptime - hostUptime() + time.Second - 1) / time.Second)
	id := strconv.Itoa(uid)
	return append([]string{t.unshare, "--time", "--boottime", strconv.FormatInt(off, 10), "--",
		t.setpriv, "--reuid=" + id, "--regid=" + id, "--clear-groups", "--pdeathsig", "SIGKILL", "--"}, argv...)
}

// hostUptime is the host's CLOCK_BOOTTIME as /proc/uptime gives it.
func hostUptime() time.Duration {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0
	}
	up, _ := parseUptime(string(b))
	return up
}

// parseUptime reads /proc/uptime's first field.
func parseUptime(s string) (time.Duration, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return 0, fmt.Errorf("empty /proc/uptime")
	}
	sec, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/uptime %q: %w", s, err)
	}
	return time.Duration(sec * float64(time.Second)), nil
}
