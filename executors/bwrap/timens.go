package bwrap

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Uptime is what a sandbox's /proc/uptime (uptime, w, top) reads when it
// starts: its own clock, not the host's. The host's uptime tells code when
// the host booted, and output that prints it differed from machine to
// machine: InterCode's fs_4 task 25 reads the load average as `uptime`'s
// 10th field, which is the 1-minute figure on a host up for days and the
// 15-minute one on a host up for hours, so a replay's reward followed the
// host. A day and three hours gives the common "up 1 day, 3:00" form.
//
// It needs a time namespace (Linux 5.6), made as root before bwrap starts:
// bwrap cannot make one and a slot's uid may not. Without root, or where the probe fails, sandboxes read the host's
// uptime (and the launcher logs it once); docker has no time namespaces.
const Uptime = 27 * time.Hour

// Starting bwrap in a time namespace of its own, as root, dropping to the
// slot's uid, takes no helper processes: a locked OS thread unshares the
// time namespace its children will get (CLONE_NEWTIME), writes the
// boot-time offset into it, and forks bwrap with the slot's credentials
// and the parent-death signal (set after the credential change, which
// clears it). util-linux's unshare and setpriv did the same as two more
// exec hops per sandbox instance, a fifth of an instance's start.

var (
	timeNSOnce sync.Once
	timeNSOK   bool
)

// probeTimeNS checks, once per process, that a time namespace with a
// boot-time offset can be made here.
func probeTimeNS() bool {
	timeNSOnce.Do(func() {
		if err := checkTimeNS(); err != nil {
			log.Printf("bwrap: sandboxes read the host's uptime: %v", err)
			return
		}
		timeNSOK = true
	})
	return timeNSOK
}

func checkTimeNS() error {
	cat, err := exec.LookPath("cat")
	if err != nil {
		return fmt.Errorf("no cat to check a time namespace with: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cat, "/proc/uptime")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}, Pdeathsig: syscall.SIGKILL}
	waited, err := startInTimeNS(cmd, Uptime)
	if err == nil {
		err = <-waited
	}
	if err != nil {
		return fmt.Errorf("no time namespace (%s): %w", strings.TrimSpace(out.String()), err)
	}
	up, err := parseUptime(out.String())
	if err != nil || up < Uptime || up > Uptime+time.Minute {
		return fmt.Errorf("a time namespace's uptime read %q", strings.TrimSpace(out.String()))
	}
	return nil
}

// startInTimeNS starts cmd in a new time namespace whose uptime starts at
// uptime and returns a channel that gets cmd.Wait's error. The forking
// thread stays locked and alive until cmd exits: its namespace for
// children is the new one (no other goroutine may run on it), and a
// parent-death signal fires when the thread that forked the child exits,
// not the process.
func startInTimeNS(cmd *exec.Cmd, uptime time.Duration) (<-chan error, error) {
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := unix.Unshare(unix.CLONE_NEWTIME); err != nil {
			started <- fmt.Errorf("unshare time namespace: %w", err)
			return
		}
		// Whole seconds, rounded up: the sandbox never reads less than uptime.
		off := int64((uptime - hostUptime() + time.Second - 1) / time.Second)
		offsets := fmt.Sprintf("boottime %d 0\n", off)
		// /proc/TID (not thread-self, which has no timens_offsets) is this
		// thread's: its namespace for children.
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/timens_offsets", unix.Gettid()), []byte(offsets), 0); err != nil {
			started <- fmt.Errorf("set boot-time offset: %w", err)
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
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
