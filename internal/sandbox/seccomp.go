package sandbox

import (
	"encoding/binary"
	"fmt"
	"os"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// deniedSyscalls fail with EPERM inside isolated sandboxes: they change
// mounts or namespaces, inspect other processes, load kernel code, or widen
// the kernel attack surface without any use for ordinary programs.
var deniedSyscalls = []uint32{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_KCMP,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_IOPL, unix.SYS_IOPERM,
	unix.SYS_LOOKUP_DCOOKIE, unix.SYS_SYSLOG, unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_ADJTIMEX, unix.SYS_VHANGUP, unix.SYS_NFSSERVCTL, unix.SYS_PERSONALITY,
	unix.SYS_OPEN_TREE, unix.SYS_MOVE_MOUNT, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_FANOTIFY_INIT,
}

const (
	auditArchX8664 = 0xc000003e
	x32SyscallBit  = 0x40000000
	seccompDataNr  = 0
	seccompDataArc = 4
	seccompArg0Lo  = 16
)

// seccompProgram assembles the deny-list filter: wrong architecture or x32
// calls are killed; denied calls, clone with CLONE_NEWUSER and clone3 (whose
// flags a filter cannot read; libc falls back to clone) return an error;
// everything else is allowed.
func seccompProgram() ([]bpf.RawInstruction, error) {
	const (
		allow  = 0x7fff0000      // SECCOMP_RET_ALLOW
		kill   = 0x80000000      // SECCOMP_RET_KILL_PROCESS
		eperm  = 0x00050000 | 1  // SECCOMP_RET_ERRNO | EPERM
		enosys = 0x00050000 | 38 // SECCOMP_RET_ERRNO | ENOSYS
	)
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: seccompDataArc, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX8664, SkipTrue: 1},
		bpf.RetConstant{Val: kill},
		bpf.LoadAbsolute{Off: seccompDataNr, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32SyscallBit, SkipFalse: 1},
		bpf.RetConstant{Val: kill},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE3, SkipFalse: 1},
		bpf.RetConstant{Val: enosys},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.SYS_CLONE, SkipFalse: 4},
		bpf.LoadAbsolute{Off: seccompArg0Lo, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: unix.CLONE_NEWUSER, SkipFalse: 1},
		bpf.RetConstant{Val: eperm},
		bpf.RetConstant{Val: allow},
	}
	for _, nr := range deniedSyscalls {
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipFalse: 1}, bpf.RetConstant{Val: eperm})
	}
	prog = append(prog, bpf.RetConstant{Val: allow})
	return bpf.Assemble(prog)
}

// seccompFile returns a file holding the filter as struct sock_filter[]
// (bwrap --seccomp FD reads it to EOF). The caller closes it.
func seccompFile() (*os.File, error) {
	raw, err := seccompProgram()
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	buf := make([]byte, 0, len(raw)*8)
	for _, ins := range raw {
		buf = binary.LittleEndian.AppendUint16(buf, ins.Op)
		buf = append(buf, ins.Jt, ins.Jf)
		buf = binary.LittleEndian.AppendUint32(buf, ins.K)
	}
	fd, err := unix.MemfdCreate("codexec-seccomp", 0)
	if err != nil {
		return nil, fmt.Errorf("seccomp memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "codexec-seccomp")
	if _, err := f.Write(buf); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
