//go:build linux && amd64

package seccomp

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// TestProgramDenies decodes the filter and checks, for a sample of system
// calls, the return it reaches: denied ones fail with EPERM, clone3 with
// ENOSYS, the rest are allowed.
func TestProgramDenies(t *testing.T) {
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog)%8 != 0 {
		t.Fatalf("program of %d bytes is not whole instructions", len(prog))
	}
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	cases := []struct {
		name string
		nr   uint32
		want uint32
	}{
		{"mount", unix.SYS_MOUNT, eperm},
		{"unshare", unix.SYS_UNSHARE, eperm},
		{"ptrace", unix.SYS_PTRACE, eperm},
		{"bpf", unix.SYS_BPF, eperm},
		{"clone3", unix.SYS_CLONE3, uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))},
		{"read", unix.SYS_READ, unix.SECCOMP_RET_ALLOW},
		{"openat", unix.SYS_OPENAT, unix.SECCOMP_RET_ALLOW},
		{"x32 read", 0x40000000 | unix.SYS_READ, unix.SECCOMP_RET_KILL_PROCESS},
	}
	for _, c := range cases {
		if got := run(t, prog, c.nr, unix.AUDIT_ARCH_X86_64, 0); got != c.want {
			t.Errorf("%s: returns %#x, want %#x", c.name, got, c.want)
		}
	}
	if got := run(t, prog, unix.SYS_READ, unix.AUDIT_ARCH_I386, 0); got != unix.SECCOMP_RET_KILL_PROCESS {
		t.Errorf("foreign architecture: returns %#x, want kill", got)
	}
	if got := run(t, prog, unix.SYS_CLONE, unix.AUDIT_ARCH_X86_64, unix.CLONE_NEWUSER); got != eperm {
		t.Errorf("clone(CLONE_NEWUSER): returns %#x, want EPERM", got)
	}
	if got := run(t, prog, unix.SYS_CLONE, unix.AUDIT_ARCH_X86_64, uint64(unix.SIGCHLD)); got != unix.SECCOMP_RET_ALLOW {
		t.Errorf("clone(SIGCHLD): returns %#x, want allow", got)
	}
}

// run interprets the subset of classic BPF the filter uses over one
// seccomp_data (nr, arch, arg0).
func run(t *testing.T, prog []byte, nr, arch uint32, arg0 uint64) uint32 {
	var acc uint32
	for pc := 0; pc*8 < len(prog); pc++ {
		ins := prog[pc*8:]
		code := binary.NativeEndian.Uint16(ins)
		jt, jf, k := ins[2], ins[3], binary.NativeEndian.Uint32(ins[4:])
		jump := func(cond bool) {
			if cond {
				pc += int(jt)
			} else {
				pc += int(jf)
			}
		}
		switch code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = map[uint32]uint32{0: nr, 4: arch, 16: uint32(arg0)}[k]
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			jump(acc == k)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			jump(acc >= k)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			jump(acc&k != 0)
		case unix.BPF_RET | unix.BPF_K:
			return k
		default:
			t.Fatalf("instruction %d: unknown code %#x", pc, code)
		}
	}
	t.Fatal("program ran off its end")
	return 0
}
