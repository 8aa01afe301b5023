package bwrap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// runFilter interprets the opcodes the assembled filter uses against one
// struct seccomp_data, so the program's decisions can be checked without
// installing it.
func runFilter(t *testing.T, prog []byte, arch, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	var acc uint32
	for pc := 0; pc < len(prog)/8; pc++ {
		in := prog[8*pc:]
		code := binary.LittleEndian.Uint16(in)
		jt, jf := int(in[2]), int(in[3])
		k := binary.LittleEndian.Uint32(in[4:])
		switch code {
		case bpfLdWAbs:
			acc = binary.LittleEndian.Uint32(data[k:])
		case bpfJeqK, bpfJgeK:
			if (code == bpfJeqK && acc == k) || (code == bpfJgeK && acc >= k) {
				pc += jt
			} else {
				pc += jf
			}
		case bpfRetK:
			return k
		default:
			t.Fatalf("pc %d: unexpected opcode %#x", pc, code)
		}
	}
	t.Fatalf("the filter ran off its end")
	return 0
}

func TestFilterDecisions(t *testing.T) {
	prog, err := assemble(filterProgram())
	if err != nil {
		t.Fatal(err)
	}
	if len(prog)%8 != 0 || len(prog)/8 > 4096 {
		t.Fatalf("got a %d-byte program, want whole instructions, at most 4096", len(prog))
	}
	const eperm = retErrno | errEPERM
	cases := []struct {
		name string
		arch uint32
		nr   uint32
		arg0 uint64
		want uint32
	}{
		{"getpid", auditArchX8664, 39, 0, retAllow},
		{"read", auditArchX8664, 0, 0, retAllow},
		{"clone", auditArchX8664, 56, 0, retAllow},
		{"prctl", auditArchX8664, 157, 0, retAllow},
		{"add_key", auditArchX8664, 248, 0, eperm},
		{"keyctl", auditArchX8664, 250, 0, eperm},
		{"ptrace", auditArchX8664, 101, 0, eperm},
		{"io_uring_setup", auditArchX8664, 425, 0, eperm},
		{"quotactl_fd", auditArchX8664, 443, 0, eperm},
		{"x32 getpid", auditArchX8664, x32SyscallBit | 39, 0, eperm},
		{"i386 arch", 0x40000003, 20, 0, retKillProcess},
		{"personality query", auditArchX8664, sysPersonality, 0xffffffff, retAllow},
		{"personality query high bits ignored", auditArchX8664, sysPersonality, 0x1_ffffffff, retAllow},
		{"personality PER_LINUX", auditArchX8664, sysPersonality, 0, retAllow},
		{"personality ADDR_NO_RANDOMIZE", auditArchX8664, sysPersonality, 0x0040000, eperm},
		{"personality READ_IMPLIES_EXEC", auditArchX8664, sysPersonality, 0x0400000, eperm},
	}
	for _, s := range deniedSyscalls {
		cases = append(cases, struct {
			name string
			arch uint32
			nr   uint32
			arg0 uint64
			want uint32
		}{"table " + s.name, auditArchX8664, s.nr, 0, eperm})
	}
	for _, c := range cases {
		if got := runFilter(t, prog, c.arch, c.nr, c.arg0); got != c.want {
			t.Errorf("%s (arch %#x nr %d arg0 %#x): got %#x, want %#x", c.name, c.arch, c.nr, c.arg0, got, c.want)
		}
	}
	// Every syscall number below the table's top that is not in it is allowed.
	denied := map[uint32]bool{sysPersonality: true}
	for _, s := range deniedSyscalls {
		denied[s.nr] = true
	}
	for nr := uint32(0); nr < 460; nr++ {
		if !denied[nr] && runFilter(t, prog, auditArchX8664, nr, 0) != retAllow {
			t.Errorf("syscall %d: got denied, want allowed", nr)
		}
	}
}

// TestSyscallNumbers checks the table against the kernel headers when
// they are installed (Debian: linux-libc-dev).
func TestSyscallNumbers(t *testing.T) {
	const hdr = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
	b, err := os.ReadFile(hdr)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s absent (install linux-libc-dev)", hdr)
	}
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	nums := map[string]uint32{}
	for _, m := range regexp.MustCompile(`(?m)^#define __NR_(\w+) (\d+)$`).FindAllStringSubmatch(text, -1) {
		n, _ := strconv.ParseUint(m[2], 10, 32)
		nums[m[1]] = uint32(n)
	}
	seen := map[string]bool{}
	for _, s := range append(deniedSyscalls, struct {
		name string
		nr   uint32
	}{"personality", sysPersonality}) {
		if seen[s.name] {
			t.Errorf("%s is listed twice", s.name)
		}
		seen[s.name] = true
		got, ok := nums[s.name]
		if !ok {
			t.Errorf("%s: not in %s", s.name, hdr)
		} else if got != s.nr {
			t.Errorf("%s: got %d in the table, want %d from %s", s.name, s.nr, got, hdr)
		}
	}
}

func TestAssembleRejectsBadJumps(t *testing.T) {
	for _, prog := range [][]insn{
		{{code: bpfJeqK, jt: "nowhere"}, {code: bpfRetK}},
		{{code: bpfRetK, label: "back"}, {code: bpfJeqK, jt: "back"}},
	} {
		if _, err := assemble(prog); err == nil {
			t.Errorf("assemble(%v): got no error, want one", fmt.Sprint(prog))
		}
	}
}
