package executors

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelPath runs a python session's cells from the host straight on the
// session's kernel process, without the runner on the path (three processes
// per cell became two: docs/sandbox.md, "Python cells without the
// runner"). The runner hands the host, on a channel only it holds
// (KernelChannel), what it used per cell: the kernel's sockets, its HMAC
// key and pid, and the capture files; the host reads the instance's cgroup
// counters (CPU time, OOM kills) itself, as it made the cgroup. Everything
// that is not a plain cell with a trusted status (a kernel that died, a
// status that cannot be trusted, a limit passed, a cell the kernel hands
// back, a non-ASCII cell) goes to the runner, which kills, restarts and
// reports as for its own cells.
type kernelPath struct {
	ch    *os.File // the host's end of the channel
	chFD  int      // its other end, in the runner
	cpu   int      // the cgroup's CPU counter, re-read with pread
	cpuV2 bool     // cpu.stat (usec) rather than cpuacct.usage (ns)
	oom   int      // the cgroup's OOM counter
	procs string   // the cgroup's cgroup.procs
	ncpu  int
	// own is what cgroup.procs listed when the kernel was taken (bwrap,
	// the runner, the kernel). Any other process there after a cell is
	// one the cell left, which the runner kills (strays).
	own map[int]bool

	k      *kernelProc
	n      int    // cells of the session so far (their names: <cell-N>)
	served int    // cells that never went to the runner
	nonces []byte // pool of random bytes the nonces are cut from
	buf    []byte
}

// kernelProc is one kernel process as the runner handed it over.
type kernelProc struct {
	req, st, out, err int // the request and status sockets, the capture files
	pid               int // its host pid: the status socket's only trusted sender
	pidfd             int
	mac               hash.Hash // HMAC-SHA256 under the kernel's key
	// stf is st in Go's poller (st is non-blocking: the runner only
	// reads it with MSG_DONTWAIT), so the wait for a status parks this
	// goroutine rather than a thread in poll(2).
	stf  *os.File
	stRC syscall.RawConn
}

// newKernelPath returns the direct path of conn's instance, or nil where
// its Conn has no channel.
func newKernelPath(conn Conn) (*kernelPath, error) {
	kc, ok := conn.(KernelChannel)
	if !ok {
		return nil, nil
	}
	ch, fd := kc.Channel()
	if ch == nil {
		return nil, nil
	}
	cpu, oom, procs := kc.Counters()
	d := &kernelPath{ch: ch, chFD: fd, procs: procs, cpuV2: strings.HasSuffix(cpu, "cpu.stat"), ncpu: 1}
	var err error
	if d.cpu, err = unix.Open(cpu, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("kernel channel: %s: %w", cpu, err)
	}
	if d.oom, err = unix.Open(oom, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		unix.Close(d.cpu)
		return nil, fmt.Errorf("kernel channel: %s: %w", oom, err)
	}

	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil && set.Count() > 0 {
		d.ncpu = set.Count()
	}
	return d, nil
}

func (d *kernelPath) close() {
	d.dropKernel()
	unix.Close(d.cpu)
	unix.Close(d.oom)
}

func (d *kernelPath) dropKernel() {
	if k := d.k; k != nil {
		k.stf.Close()
		for _, fd := range []int{k.req, k.out, k.err, k.pidfd} {
			unix.Close(fd)
		}
		d.k = nil
	}
}

// takeKernel reads what the runner sent on the channel since the last
// look (it sends a kernel each time it starts one) and keeps the last.
func (d *kernelPath) takeKernel() error {
	rc, err := d.ch.SyscallConn()
	if err != nil {
		return err
	}
	var got *kernelProc
	for {
		buf := make([]byte, 64)
		oob := make([]byte, unix.CmsgSpace(4*4))
		var n, oobn int
		var rerr error
		if err := rc.Control(func(fd uintptr) {
			n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		}); err != nil {
			return err
		}
		if errors.Is(rerr, unix.EAGAIN) {
			break
		}
		if rerr != nil {
			return fmt.Errorf("kernel channel: %w", rerr)
		}
		var fds []int
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return fmt.Errorf("kernel channel: %w", err)
		}
		for _, m := range msgs {
			if fs, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, fs...)
			}
		}
		if n != 36 || len(fds) != 4 {
			for _, fd := range fds {
				unix.Close(fd)
			}
			return fmt.Errorf("kernel channel: a message of %d bytes with %d descriptors", n, len(fds))
		}
		if got != nil {
			for _, fd := range []int{got.req, got.st, got.out, got.err} {
				unix.Close(fd)
			}
		}
		got = &kernelProc{req: fds[0], st: fds[1], out: fds[2], err: fds[3], pid: int(binary.BigEndian.Uint32(buf[32:36])),
			mac: hmac.New(sha256.New, append([]byte(nil), buf[:32]...))}
	}
	if got == nil {
		return nil
	}
	d.dropKernel()
	nsPid := got.pid
	pid, err := d.hostPid(nsPid)
	if err == nil {
		got.pid = pid
		got.pidfd, err = unix.PidfdOpen(pid, 0)
	}
	if err == nil {
		// The pidfd pins the process while it lives: if it is still the
		// kernel now, it is the one the descriptor names.
		if again, aerr := d.hostPid(nsPid); aerr != nil || again != pid {
			unix.Close(got.pidfd)
			err = fmt.Errorf("the kernel (pid %d in the sandbox) ended as it started", nsPid)
		}
	}
	if err == nil {
		err = unix.SetNonblock(got.st, true)
	}
	if err == nil {
		// The runner set it already; the senders' credentials are what
		// the host trusts, so it does not rely on that.
		err = unix.SetsockoptInt(got.st, unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}
	if err != nil {
		for _, fd := range []int{got.req, got.st, got.out, got.err} {
			unix.Close(fd)
		}
		return fmt.Errorf("kernel channel: %w", err)
	}
	// The runner is idle and has just started the kernel: what the
	// cgroup holds now is the instance's own processes.
	own, err := d.instancePids()
	if err != nil {
		for _, fd := range []int{got.req, got.st, got.out, got.err, got.pidfd} {
			unix.Close(fd)
		}
		return fmt.Errorf("kernel channel: %w", err)
	}
	d.own = make(map[int]bool, len(own))
	for _, pid := range own {
		d.own[pid] = true
	}
	got.stf = os.NewFile(uintptr(got.st), "kernel-status")
	if got.stRC, err = got.stf.SyscallConn(); err != nil {
		got.stf.Close()
		for _, fd := range []int{got.req, got.out, got.err, got.pidfd} {
			unix.Close(fd)
		}
		return fmt.Errorf("kernel channel: %w", err)
	}
	d.k = got
	return nil
}

// instancePids is what the instance's cgroup.procs lists now. The file
// is opened for each look: cgroup v1 keeps the list an open file read
// first, and a pread from 0 gives that list again.
func (d *kernelPath) instancePids() ([]int, error) {
	fd, err := unix.Open(d.procs, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("cgroup.procs: %w", err)
	}
	buf := d.scratch()
	n, err := rawPread(fd, buf, 0)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("cgroup.procs: %w", err)
	}
	var pids []int
	for _, f := range bytes.Fields(buf[:n]) {
		pid, err := strconv.Atoi(string(f))
		if err != nil {
			return nil, fmt.Errorf("cgroup.procs: %w", err)
		}
		pids = append(pids, pid)
	}
	if n == len(buf) {
		pids = append(pids, -1) // more than fits: not the instance's own alone
	}
	return pids, nil
}

// strays says whether the instance has a process besides its own ones
// (d.own): one the cell left running.
func (d *kernelPath) strays() bool {
	pids, err := d.instancePids()
	if err != nil {
		return true
	}
	for _, pid := range pids {
		if !d.own[pid] {
			return true
		}
	}
	return false
}

// hostPid maps the kernel's pid in the sandbox to the host's: the process
// of the instance's cgroup whose innermost NSpid is nsPid (pids are unique
// in the sandbox's namespace).
func (d *kernelPath) hostPid(nsPid int) (int, error) {
	data, err := os.ReadFile(d.procs)
	if err != nil {
		return 0, err
	}
	for _, f := range strings.Fields(string(data)) {
		st, err := os.ReadFile("/proc/" + f + "/status")
		if err != nil {
			continue
		}
		i := bytes.Index(st, []byte("\nNSpid:"))
		if i < 0 {
			continue
		}
		line := st[i+7:]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		ids := strings.Fields(string(line))
		if len(ids) >= 2 && ids[len(ids)-1] == strconv.Itoa(nsPid) {
			return strconv.Atoi(f)
		}
	}
	return 0, fmt.Errorf("no process of the instance is pid %d in the sandbox", nsPid)
}

// readCounter returns the number after key in fd's file (cpu.stat,
// memory.events, memory.oom_control), or the whole file as a number when
// key is "".
func readCounter(fd int, buf []byte, key string) (int64, error) {
	n, err := rawPread(fd, buf, 0)
	if err != nil {
		return 0, err
	}
	b := buf[:n]
	if key != "" {
		i := bytes.Index(b, []byte(key+" "))
		if i < 0 || (i > 0 && b[i-1] != '\n') {
			return 0, fmt.Errorf("no %s in the counter", key)
		}
		b = b[i+len(key)+1:]
	}
	if j := bytes.IndexByte(b, '\n'); j >= 0 {
		b = b[:j]
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}

// cpuSeconds is the instance's CPU time so far, every process of it.
func (d *kernelPath) cpuSeconds() (float64, error) {
	if d.cpuV2 {
		v, err := readCounter(d.cpu, d.scratch(), "usage_usec")
		return float64(v) / 1e6, err
	}
	v, err := readCounter(d.cpu, d.scratch(), "")
	return float64(v) / 1e9, err
}

func (d *kernelPath) oomKills() (int64, error) { return readCounter(d.oom, d.scratch(), "oom_kill") }

func (d *kernelPath) scratch() []byte {
	if d.buf == nil {
		d.buf = make([]byte, 4096)
	}
	return d.buf
}

func (d *kernelPath) nonce() []byte {
	if len(d.nonces) < 16 {
		d.nonces = make([]byte, 4096)
		if _, err := rand.Read(d.nonces); err != nil {
			panic(err) // crypto/rand does not fail on Linux
		}
	}
	n := d.nonces[:16:16]
	d.nonces = d.nonces[16:]
	return n
}

// captureRotate is the runner's CAPTURE_ROTATE: past it a capture file is
// truncated before a cell.
const captureRotate = 8 << 20

// exec runs one cell. in is the session's instance, for what goes to the
// runner.
func (d *kernelPath) exec(ctx context.Context, in *instance, code string, lim Limits) (wireResponse, error) {
	d.n++
	k := d.k
	if k == nil || !isASCII(code) || readable(uintptr(k.pidfd)) {
		// A non-ASCII cell compiles in the runner (compile_here); a
		// kernel that ended between cells is the runner's to report.
		return d.runner(ctx, in, wireRequest{Op: "cell", Code: code, N: d.n}, lim)
	}
	var begin [2]int64
	for i, fd := range []int{k.out, k.err} {
		size, err := rawSize(fd)
		if err != nil {
			return wireResponse{}, fmt.Errorf("%w: capture file: %v", errDied, err)
		}
		if size > captureRotate {
			if err := unix.Ftruncate(fd, 0); err != nil {
				return wireResponse{}, fmt.Errorf("%w: capture file: %v", errDied, err)
			}
			size = 0
		}
		begin[i] = size
	}
	ooms, err := d.oomKills()
	if err != nil {
		return wireResponse{}, fmt.Errorf("%w: OOM counter: %v", errDied, err)
	}
	cpu0, err := d.cpuSeconds()
	if err != nil {
		return wireResponse{}, fmt.Errorf("%w: CPU counter: %v", errDied, err)
	}
	start := time.Now()
	nonce := d.nonce()
	out := d.call(ctx, k, nonce, code, lim, cpu0, start)
	duration := time.Since(start)
	if out.err != nil {
		if ctx.Err() != nil {
			return wireResponse{}, ctx.Err()
		}
		return wireResponse{}, out.err
	}
	end := wireRequest{Op: "cell_end", N: d.n, Begin: begin[:], OOMs: &ooms, DurationNS: int64(duration)}
	switch out.status {
	case "ok", "ok-ended":
		if d.strays() {
			// No process outlives its cell (docs/sandbox.md): one left
			// behind would keep the capture files, where it could rewrite
			// a later cell's output, and use CPU no cell's limit counts.
			// The runner kills all but the kernel, before the output is
			// read.
			if _, err := d.runner(ctx, in, wireRequest{Op: "strays"}, lim); err != nil {
				return wireResponse{}, err
			}
		}
		w := d.result(k, begin, ooms, out.rc, lim)
		w.DurationNS = int64(duration)
		d.served++
		if out.status == "ok-ended" {
			// The kernel ended just after it answered: a fresh one for
			// the next cell, as the runner's path starts one.
			if _, err := d.runner(ctx, in, wireRequest{Op: "kernel"}, lim); err != nil {
				return wireResponse{}, err
			}
		}
		return w, nil
	case "ast":
		// What the kernel wrote while compiling goes; the runner compiles
		// the cell with the AST and runs it (Session.python_cell).
		for i, fd := range []int{k.out, k.err} {
			_ = unix.Ftruncate(fd, begin[i])
		}
		return d.runner(ctx, in, wireRequest{Op: "cell", Code: code, N: d.n, AST: true}, lim)
	default: // thread, tampered, died, cpu, wall
		end.What = out.status
		return d.runner(ctx, in, end, lim)
	}
}

// runner sends req to the runner and takes the kernel it may have started.
func (d *kernelPath) runner(ctx context.Context, in *instance, req wireRequest, lim Limits) (wireResponse, error) {
	// The runner stops a cell it runs past its limits; this wait only
	// guards against a runner that hangs.
	resp, err := in.call(ctx, req, lim.WallCap()+grace)
	if err != nil {
		return resp, err
	}
	if err := d.takeKernel(); err != nil {
		return wireResponse{}, fmt.Errorf("%w: %v", errDied, err)
	}
	return resp, nil
}

type callOut struct {
	status string // ok, ok-ended, ast, thread, tampered, died, cpu, wall
	rc     int
	err    error
}

// call sends the cell to the kernel and waits for its status, checking
// the cell's limits as the runner's CellWatch does: the instance's CPU
// time once the cell could have used its limit on every CPU, then every
// 20 ms; the wall cap. A kernel that ended closes the status socket's
// last writer, which wakes the wait; one whose socket a cell's process
// still holds is seen at the next look at its pidfd (every 50 ms until
// the CPU checks start).
func (d *kernelPath) call(ctx context.Context, k *kernelProc, nonce []byte, code string, lim Limits, cpu0 float64, start time.Time) callOut {
	name := "<cell-" + strconv.Itoa(d.n) + ">"
	blob := marshalStrings(name, code)
	k.mac.Reset()
	k.mac.Write(nonce)
	k.mac.Write([]byte{'s'})
	k.mac.Write(blob)
	req := make([]byte, 0, 57+len(blob))
	req = binary.BigEndian.AppendUint64(req, uint64(len(blob)))
	req = append(req, nonce...)
	req = append(req, 's')
	req = k.mac.Sum(req)
	req = append(req, blob...)
	endE, endX := k.endTag('E', nonce), k.endTag('X', nonce)

	timeout, wall := lim.Timeout.Seconds(), lim.WallCap().Seconds()
	if wall < timeout {
		wall = timeout
	}
	first := min(timeout/float64(d.ncpu)*0.9, wall)
	cpuFrom := start.Add(time.Duration(max(first, 0.001) * float64(time.Second)))
	wallEnd := start.Add(time.Duration(wall * float64(time.Second)))

	// The kernel is idle, reading: the request goes into the socket's
	// buffer at once unless it is large.
	if rest, err := rawSend(k.req, req); err == nil && len(rest) > 0 {
		if out, ok := d.sendRest(ctx, k, rest, wallEnd); !ok {
			return out
		}
	}
	defer stopReadsAtCancel(ctx, k.stf)()
	var got [][]byte
	for {
		now := time.Now()
		next := now.Add(50 * time.Millisecond)
		if !now.Before(cpuFrom) {
			next = now.Add(20 * time.Millisecond)
		} else if next.After(cpuFrom) {
			next = cpuFrom
		}
		if next.After(wallEnd) {
			next = wallEnd
		}
		if err := k.stf.SetReadDeadline(next); err != nil {
			return callOut{err: fmt.Errorf("%w: %v", errDied, err)}
		}
		done, eof, err := k.wait(endE, endX, &got)
		switch {
		case done:
			st, rc := kernelStatus(got)
			return callOut{status: st, rc: rc}
		case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
			return callOut{err: fmt.Errorf("%w: status socket: %v", errDied, err)}
		case ctx.Err() != nil:
			return callOut{err: ctx.Err()}
		}
		if eof || readable(uintptr(k.pidfd)) {
			return callOut{status: "died"}
		}
		now = time.Now()
		if !now.Before(wallEnd) {
			return callOut{status: "wall"}
		}
		if !now.Before(cpuFrom) {
			used, err := d.cpuSeconds()
			if err != nil {
				return callOut{err: fmt.Errorf("%w: CPU counter: %v", errDied, err)}
			}
			if used-cpu0 > timeout {
				return callOut{status: "cpu"}
			}
		}
	}
}

// sendRest sends the rest of a large request as the kernel reads it
// (rare: a cell of hundreds of kilobytes). ok is false when the cell ended
// meanwhile (out says how).
func (d *kernelPath) sendRest(ctx context.Context, k *kernelProc, rest []byte, wallEnd time.Time) (callOut, bool) {
	fds := []unix.PollFd{{Fd: int32(k.req), Events: unix.POLLOUT}, {Fd: int32(k.pidfd), Events: unix.POLLIN}}
	for len(rest) > 0 {
		if ctx.Err() != nil {
			return callOut{err: ctx.Err()}, false
		}
		if !time.Now().Before(wallEnd) {
			return callOut{status: "wall"}, false
		}
		if _, err := unix.Poll(fds, 50); err != nil && err != unix.EINTR {
			return callOut{err: fmt.Errorf("%w: poll: %v", errDied, err)}, false
		}
		if fds[1].Revents != 0 {
			return callOut{status: "died"}, false
		}
		var err error
		if rest, err = rawSend(k.req, rest); err != nil {
			return callOut{status: "died"}, false
		}
	}
	return callOut{}, true
}

func (k *kernelProc) endTag(kind byte, nonce []byte) []byte {
	k.mac.Reset()
	k.mac.Write([]byte{kind})
	k.mac.Write(nonce)
	return k.mac.Sum(append([]byte{kind}, nonce...))
}

// wait reads the status socket, as the runner's kernel_messages does,
// until the cell's "E" (or "X") or the socket's deadline: the kernel's
// messages (the sender the kernel vouches for with SCM_CREDENTIALS) go to
// got; others' (a process a cell left) are dropped. eof: no process holds
// the socket's other end any more.
func (k *kernelProc) wait(endE, endX []byte, got *[][]byte) (done, eof bool, err error) {
	var buf [256]byte
	// Room for the credentials alone: descriptors a cell's process sends
	// along (SCM_RIGHTS) do not fit, and the kernel closes them rather
	// than install them in the host (MSG_CMSG_CLOEXEC in case one did).
	var oob [32]byte // unix.CmsgSpace(unix.SizeofUcred)
	err = k.stRC.Read(func(fd uintptr) bool {
		for {
			n, oobn, errno := rawRecvmsg(fd, buf[:], oob[:])
			switch {
			case errno == unix.EINTR:
				continue
			case errno == unix.EAGAIN:
				return false // wait in the poller
			case errno != 0 || n == 0:
				eof = true
				return true
			}
			sender := -1
			if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if cred, err := unix.ParseUnixCredentials(&m); err == nil {
						sender = int(cred.Pid)
					} else if fds, err := unix.ParseUnixRights(&m); err == nil {
						for _, fd := range fds {
							unix.Close(fd)
						}
					}
				}
			}
			if sender != k.pid {
				continue
			}
			data := buf[:n]
			if bytes.Equal(data, endE) {
				done = true
				return true
			}
			if bytes.Equal(data, endX) { // the kernel found its own interpreter patched
				*got = append(*got, []byte("X"))
				done = true
				return true
			}
			*got = append(*got, append([]byte(nil), data...))
		}
	})
	return done, eof, err
}

// kernelStatus is the runner's kernel_status: exactly one status before
// the cell's "E", else "tampered".
func kernelStatus(got [][]byte) (string, int) {
	if len(got) != 1 {
		return "tampered", 0
	}
	m := got[0]
	switch {
	case string(m) == "A":
		return "ast", 0
	case string(m) == "T":
		return "thread", 0
	case len(m) >= 3 && len(m) <= 5 && m[0] == 'R' && m[1] == ' ':
		rc, err := strconv.Atoi(string(m[2:]))
		if err == nil && rc >= 0 && m[2] != '+' {
			return "ok", rc
		}
	}
	return "tampered", 0
}

// result reads the cell's output and OOM kills, as the runner's
// Session.cell_result does.
func (d *kernelPath) result(k *kernelProc, begin [2]int64, ooms int64, rc int, lim Limits) wireResponse {
	w := wireResponse{ExitCode: rc}
	limit := lim.OutputBytes
	if limit <= 0 {
		limit = 65536
	}
	for i, fd := range []int{k.out, k.err} {
		size, at := int64(0), begin[i]
		if n, err := rawSize(fd); err == nil {
			size = n
		}
		if size < at { // the cell truncated its own stream
			at = 0
		}
		size -= at
		var data []byte
		if size > 0 {
			data = make([]byte, min(int64(limit), size))
			n, _ := rawPread(fd, data, at)
			data = data[:n]
		}
		s := decodeReplace(data)
		trunc := size > int64(limit)
		if trunc {
			s += fmt.Sprintf(truncMarker, limit)
		}
		if i == 0 {
			w.Stdout, w.StdoutTruncated = s, trunc
		} else {
			w.Stderr, w.StderrTruncated = s, trunc
		}
	}
	if rc != 0 && strings.Contains(lastRunes(w.Stderr, 4096), "MemoryError") {
		w.OOM = true
	}
	after, err := d.oomKills()
	// The kernel counts an OOM kill after it sent SIGKILL: for a cell that
	// SIGKILL ended, look again for up to 250 ms (the runner's
	// oom_killed_since).
	for i := 0; i < 50 && err == nil && after == ooms && rc == 137; i++ {
		time.Sleep(5 * time.Millisecond)
		after, err = d.oomKills()
	}
	if err == nil && after > ooms {
		w.OOM = true
	}
	return w
}

// truncMarker is the runner's MARKER.
const truncMarker = "\n[... output truncated at %d bytes ...]\n"

func lastRunes(s string, n int) string {
	for i := len(s); i > 0; {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		n--
		if n == 0 {
			return s[i:]
		}
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// marshalStrings is Python's marshal.dumps of a tuple of ASCII strings
// (the kernel's request for a cell: its name and source).
func marshalStrings(ss ...string) []byte {
	b := []byte{')', byte(len(ss))}
	for _, s := range ss {
		if len(s) < 256 {
			b = append(b, 'z', byte(len(s)))
		} else {
			b = append(b, 'a')
			b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		}
		b = append(b, s...)
	}
	return b
}

// decodeReplace is Python's bytes.decode("utf-8", "replace"): each
// maximal invalid subpart becomes one U+FFFD (Go's decoder would give one
// per byte of a cut-off sequence).
func decodeReplace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[:size])
			b = b[size:]
			continue
		}
		sb.WriteRune(utf8.RuneError)
		b = b[invalidPrefix(b):]
	}
	return sb.String()
}

// invalidPrefix is the length of the maximal subpart of an ill-formed
// sequence at b's start (Unicode 3.9, table 3-7): the lead byte and the
// continuation bytes that could still have made a character.
func invalidPrefix(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i <= need && i < len(b); i++ {
		if b[i] < lo || b[i] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}

// The system calls of a cell's path, raw (no entersyscall, so no wake-up
// of the runtime's sysmon thread: rawpipe.go says why that matters): each
// is on a memfd, a cgroup file or a non-blocking socket, so none can hold
// its thread in the kernel.

func rawSize(fd int) (int64, error) {
	var st unix.Stat_t
	if _, _, e := unix.RawSyscall(unix.SYS_FSTAT, uintptr(fd), uintptr(unsafe.Pointer(&st)), 0); e != 0 {
		return 0, e
	}
	return st.Size, nil
}

func rawPread(fd int, b []byte, off int64) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_PREAD64, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(off), 0, 0)
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return 0, e
		}
		return int(n), nil
	}
}

// rawSend sends what the socket takes now and returns the rest.
func rawSend(fd int, b []byte) ([]byte, error) {
	for len(b) > 0 {
		n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
		switch e {
		case 0:
			b = b[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return b, nil
		default:
			return b, e
		}
	}
	return nil, nil
}

func rawRecvmsg(fd uintptr, buf, oob []byte) (n, oobn int, errno unix.Errno) {
	iov := unix.Iovec{Base: &buf[0]}
	iov.SetLen(len(buf))
	msg := unix.Msghdr{Iov: &iov, Control: &oob[0]}
	msg.SetIovlen(1)
	msg.SetControllen(len(oob))
	r, _, e := unix.RawSyscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&msg)), unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
	if e != 0 {
		return 0, 0, e
	}
	return int(r), int(msg.Controllen), 0
}
