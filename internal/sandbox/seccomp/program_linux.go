//go:build linux

package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Program returns a classic-BPF seccomp filter in the kernel's binary
// layout (struct sock_filter, native endian), as bubblewrap's --seccomp
// expects. It allows everything except:
//   - any syscall of a foreign architecture or of the x32 ABI (killed),
//   - the deny-list of denied (fails with EPERM): mounting, namespaces,
//     tracing, kernel keyrings, BPF, perf, userfaultfd, module and kexec
//     loading, clock and swap changes, …,
//   - clone with CLONE_NEWUSER (EPERM) and clone3 (ENOSYS, so libc falls back
//     to clone, whose flags a filter can inspect).
func Program() ([]byte, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("seccomp filter not available on this architecture")
	}
	const (
		ld   = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		// offsets in struct seccomp_data
		offNr   = 0
		offArch = 4
		offArg0 = 16
	)
	eperm := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	enosys := uint32(unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS))
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	kill := uint32(unix.SECCOMP_RET_KILL_PROCESS)

	var p []unix.SockFilter
	add := func(code uint16, jt, jf uint8, k uint32) {
		p = append(p, unix.SockFilter{Code: code, Jt: jt, Jf: jf, K: k})
	}
	add(ld, 0, 0, offArch)
	add(jeq, 1, 0, auditArch)
	add(ret, 0, 0, kill)
	add(ld, 0, 0, offNr)
	if x32Bit != 0 {
		add(jge, 0, 1, x32Bit)
		add(ret, 0, 0, kill)
	}
	for _, nr := range deniedSyscalls {
		add(jeq, 0, 1, uint32(nr))
		add(ret, 0, 0, eperm)
	}
	add(jeq, 0, 1, uint32(unix.SYS_CLONE3))
	add(ret, 0, 0, enosys)
	// clone: deny CLONE_NEWUSER in flags (arg0, low 32 bits).
	add(jeq, 0, 3, uint32(unix.SYS_CLONE))
	add(ld, 0, 0, offArg0)
	add(jset, 0, 1, unix.CLONE_NEWUSER)
	add(ret, 0, 0, eperm)
	add(ret, 0, 0, allow)

	out := make([]byte, 0, len(p)*8)
	for _, f := range p {
		out = binary.NativeEndian.AppendUint16(out, f.Code)
		out = append(out, f.Jt, f.Jf)
		out = binary.NativeEndian.AppendUint32(out, f.K)
	}
	return out, nil
}
