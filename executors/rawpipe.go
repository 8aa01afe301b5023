package executors

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawPipe reads or writes a pipe that Go's poller owns with raw system
// calls (RawSyscall: no entersyscall), waiting in the poller as os.File
// does when the pipe is empty or full. A session cell is one request and
// one answer with the host idle in between; with os.File each cell's
// first system call woke the runtime's sysmon thread from its idle sleep,
// which then ran a few 20 us ticks before sleeping again: three context
// switches per cell where one (the wait for the answer) is needed, and
// 20-60 us of the host's CPU per cell (docs/measurements.md, fifth round).
// Raw calls are safe here only because the descriptor is non-blocking, so
// no call can hold its thread (and its P) in the kernel; newRawPipe
// checks that.
type rawPipe struct {
	rc interface {
		Read(func(fd uintptr) bool) error
		Write(func(fd uintptr) bool) error
	}
}

// newRawPipe returns f's raw reader and writer, or nil when f is not a
// non-blocking descriptor in the poller (use f itself then).
func newRawPipe(f *os.File) *rawPipe {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	nonblocking := false
	if err := rc.Control(func(fd uintptr) {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		nonblocking = err == nil && fl&unix.O_NONBLOCK != 0
	}); err != nil || !nonblocking {
		return nil
	}
	return &rawPipe{rc}
}

func (p *rawPipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n uintptr
	var errno unix.Errno
	err := p.rc.Read(func(fd uintptr) bool {
		for {
			n, _, errno = unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if errno != unix.EINTR {
				return errno != unix.EAGAIN
			}
		}
	})
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, os.NewSyscallError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return int(n), nil
}

func (p *rawPipe) Write(b []byte) (int, error) {
	done := 0
	var errno unix.Errno
	err := p.rc.Write(func(fd uintptr) bool {
		for done < len(b) {
			n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
			switch e {
			case 0:
				done += int(n)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // full: wait in the poller
			default:
				errno = e
				return true
			}
		}
		return true
	})
	if err == nil && errno != 0 {
		err = os.NewSyscallError("write", errno)
	}
	return done, err
}

// readable reports whether fd has input or an error pending (a poll that
// does not wait, raw for the reason above).
func readable(fd uintptr) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	var ts unix.Timespec
	for {
		n, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&fds[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if e != unix.EINTR {
			return e != 0 || n > 0
		}
	}
}
