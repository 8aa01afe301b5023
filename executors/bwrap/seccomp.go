package bwrap

import (
	"encoding/binary"
	"fmt"
	"os"
	"runtime"
)

// The seccomp filter is a classic-BPF program run by the kernel on every
// system call of the sandboxed payload (bwrap installs it with --seccomp
// just before exec, so bwrap's own setup is unaffected). It sees a
// struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low 32 bits on little-endian amd64

	auditArchX8664 = 0xc000003e
	x32SyscallBit  = 0x40000000

	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
	errEPERM       = 1

	// Classic BPF opcodes (linux/filter.h).
	// BPF_LD, BPF_W and BPF_K are 0, so they vanish from the sums.
	bpfLdWAbs = 0x20        // BPF_LD | BPF_W | BPF_ABS
	bpfJeqK   = 0x05 | 0x10 // BPF_JMP | BPF_JEQ | BPF_K
	bpfJgeK   = 0x05 | 0x30 // BPF_JMP | BPF_JGE | BPF_K
	bpfRetK   = 0x06        // BPF_RET | BPF_K
)

// deniedSyscalls are the amd64 system calls that fail with EPERM inside the
// sandbox: nothing a benchmark solution needs, each a known kernel attack
// surface or a way to see outside the run. Numbers are from
// /usr/include/x86_64-linux-gnu/asm/unistd_64.h. personality is not here: it
// is filtered on its argument (see personalityAllowed).
var deniedSyscalls = []struct {
	name string
	nr   uint32
}{
	{"ptrace", 101},
	{"syslog", 103},
	{"pivot_root", 155},
	{"acct", 163},
	{"mount", 165},
	{"umount2", 166},
	{"swapon", 167},
	{"swapoff", 168},
	{"reboot", 169},
	{"iopl", 172},
	{"ioperm", 173},
	{"init_module", 175},
	{"delete_module", 176},
	{"quotactl", 179},
	{"lookup_dcookie", 212},
	{"kexec_load", 246},
	{"add_key", 248},
	{"request_key", 249},
	{"keyctl", 250},
	{"unshare", 272},
	{"perf_event_open", 298},
	{"fanotify_init", 300},
	{"name_to_handle_at", 303},
	{"open_by_handle_at", 304},
	{"setns", 308},
	{"process_vm_readv", 310},
	{"process_vm_writev", 311},
	{"finit_module", 313},
	{"kexec_file_load", 320},
	{"bpf", 321},
	{"userfaultfd", 323},
	{"io_uring_setup", 425},
	{"io_uring_enter", 426},
	{"io_uring_register", 427},
	// The new mount API: mount's siblings.
	{"open_tree", 428},
	{"move_mount", 429},
	{"fsopen", 430},
	{"fsconfig", 431},
	{"fsmount", 432},
	{"fspick", 433},
	{"mount_setattr", 442},
	{"quotactl_fd", 443},
}

// sysPersonality is personality(2)'s number. Like Docker's default profile,
// only querying (0xffffffff) and the plain Linux personalities are allowed:
// the flags (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ...) weaken the payload's
// own hardening and nothing legitimate here sets them.
const sysPersonality = 135

var personalityAllowed = []uint32{0x0, 0x8, 0x20008, 0xffffffff}

// insn is one struct sock_filter, with jump targets as labels resolved by assemble.
type insn struct {
	code   uint16
	jt, jf string // label names; "" means the next instruction
	k      uint32
	label  string // this instruction's label, if any
}

// assemble resolves labels (forward only, as classic BPF requires) and
// encodes each instruction as 8 little-endian bytes: code u16, jt u8, jf u8, k u32.
func assemble(prog []insn) ([]byte, error) {
	at := map[string]int{}
	for i, in := range prog {
		if in.label != "" {
			at[in.label] = i
		}
	}
	off := func(i int, l string) (uint8, error) {
		if l == "" {
			return 0, nil
		}
		j, ok := at[l]
		if !ok {
			return 0, fmt.Errorf("seccomp: unknown label %q", l)
		}
		d := j - i - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp: jump from %d to %q (%d) out of range", i, l, j)
		}
		return uint8(d), nil
	}
	out := make([]byte, 0, 8*len(prog))
	for i, in := range prog {
		jt, err := off(i, in.jt)
		if err != nil {
			return nil, err
		}
		jf, err := off(i, in.jf)
		if err != nil {
			return nil, err
		}
		out = binary.LittleEndian.AppendUint16(out, in.code)
		out = append(out, jt, jf)
		out = binary.LittleEndian.AppendUint32(out, in.k)
	}
	return out, nil
}

// filterProgram is the amd64 filter: kill the process on any other
// architecture (i386 int 0x80 numbers would bypass the table), EPERM for
// x32 calls, the denied table and personality with flags; allow the rest.
func filterProgram() []insn {
	p := []insn{
		{code: bpfLdWAbs, k: offArch},
		{code: bpfJeqK, k: auditArchX8664, jf: "kill"},
		{code: bpfLdWAbs, k: offNr},
		{code: bpfJgeK, k: x32SyscallBit, jt: "deny"},
		{code: bpfJeqK, k: sysPersonality, jt: "personality"},
	}
	for _, s := range deniedSyscalls {
		p = append(p, insn{code: bpfJeqK, k: s.nr, jt: "deny"})
	}
	p = append(p, insn{code: bpfRetK, k: retAllow, label: "allow"})
	p = append(p, insn{code: bpfLdWAbs, k: offArg0, label: "personality"})
	for _, v := range personalityAllowed {
		p = append(p, insn{code: bpfJeqK, k: v, jt: "allow2"})
	}
	return append(p,
		insn{code: bpfRetK, k: retErrno | errEPERM, label: "deny"},
		insn{code: bpfRetK, k: retAllow, label: "allow2"},
		insn{code: bpfRetK, k: retKillProcess, label: "kill"},
	)
}

// seccompFilter is the assembled filter, or nil when the host is not amd64
// (the table is amd64's; other hosts run without a filter).
var seccompFilter = func() []byte {
	if runtime.GOARCH != "amd64" {
		return nil
	}
	b, err := assemble(filterProgram())
	if err != nil {
		panic(err) // a bug in the fixed program above, caught by the tests
	}
	return b
}()

// seccompPipe returns a read end holding the filter for bwrap's --seccomp.
// The program (under 500 bytes) fits in the pipe buffer, so the write end is
// closed at once.
func seccompPipe() (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	_, err = w.Write(seccompFilter)
	w.Close()
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("bwrap: writing seccomp filter: %w", err)
	}
	return r, nil
}
