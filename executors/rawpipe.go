package executors

import (
	"io"
	"os"
	"syscall"
	"unsafe"
)

// The pool's reads and writes of a runner's pipes (PipeConn) are raw
// system calls inside the runtime poller's RawConn callbacks. An ordinary
// os.File Read or Write enters the scheduler's system-call state, and the
// first such call after the process went idle wakes the runtime's monitor
// thread (sysmon), which then polls on 20 µs sleeps until it finds the
// process idle again. A session cell leaves the host idle while it runs,
// so every cell paid for that wake-up: measured, a third or more of the
// host's CPU per cell. The pipes are non-blocking (the poller's), so a raw
// read or write never blocks; waiting is still the poller's, deadlines
// included.

// rawReader reads a pipe with raw read(2) calls.
type rawReader struct{ rc syscall.RawConn }

func newRawReader(f *os.File) (io.Reader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return rawReader{rc}, nil
}

func (r rawReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := r.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case 0:
				n = int(m)
				if n == 0 {
					rerr = io.EOF
				}
				return true
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // the poller waits until the pipe is readable
			default:
				rerr = os.NewSyscallError("read", e)
				return true
			}
		}
	})
	if err != nil {
		return 0, err // the deadline, or the pipe closed
	}
	return n, rerr
}

// rawWrite writes all of b to the pipe with raw write(2) calls, waiting
// on the poller while the pipe is full.
func rawWrite(f *os.File, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for len(b) > 0 {
			m, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				b = b[m:]
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false
			default:
				werr = os.NewSyscallError("write", e)
				return true
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// rawPending reports whether the pipe has data to read or has ended (or
// cannot be checked), with one raw read(2) that does not wait. It may
// consume a byte: pending data between requests means the instance is
// out of step and is discarded anyway.
func rawPending(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return true
	}
	pending := true
	if err := rc.Control(func(fd uintptr) {
		var b [1]byte
		for {
			_, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), 1)
			if e == syscall.EINTR {
				continue
			}
			// EAGAIN: nothing to read and the writer is alive. Anything
			// else (a byte, the end, an error) is not an idle runner.
			pending = e != syscall.EAGAIN
			return
		}
	}); err != nil {
		return true
	}
	return pending
}
