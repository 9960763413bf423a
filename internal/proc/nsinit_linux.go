//go:build linux

package proc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// NamespaceInit is a program that runs as pid 1 of its own pid namespace
// (a run forked by the python fork-server). The kernel spares a namespace's
// init from every signal it has no handler for, SIGKILL from outside
// excepted; the same program as pid 2 would die of them. So that it ends as
// any other run does, a terminating signal it neither handles, ignores nor
// blocks is applied as SIGKILL, and its wait status reported as that
// signal (ExitSignal). A pidfd keeps signals from reaching a process that
// reused the pid. A nil *NamespaceInit does nothing; methods are safe for
// concurrent use.
type NamespaceInit struct {
	pid   int
	mu    sync.Mutex // guards pidfd against close
	pidfd int
	// applied is the signal applied as SIGKILL (0: none).
	applied atomic.Int32
}

// OpenNamespaceInit opens pid, which the caller knows to be alive and an
// init (not a child of the caller, so it may not wait for it).
func OpenNamespaceInit(pid int) (*NamespaceInit, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	return &NamespaceInit{pid: pid, pidfd: fd}, nil
}

// Close releases the pidfd; later signals do nothing.
func (l *NamespaceInit) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pidfd >= 0 {
		_ = unix.Close(l.pidfd)
		l.pidfd = -1
	}
}

// Signal applies sig as it would act on a process that is not an init:
// a terminating signal with its default action becomes SIGKILL. Others,
// and signals the program handles, are left to the caller's own delivery.
func (l *NamespaceInit) Signal(sig syscall.Signal) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pidfd < 0 || !terminatesByDefault(sig) || !l.defaultAction(sig) {
		return
	}
	l.applied.CompareAndSwap(0, int32(sig))
	_ = unix.PidfdSendSignal(l.pidfd, unix.SIGKILL, nil, 0)
}

// defaultAction reports whether sig would take its default action in the
// program now: no handler, not ignored, not blocked. The pidfd check after
// the read proves the status read was the program's own.
func (l *NamespaceInit) defaultAction(sig syscall.Signal) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(l.pid) + "/status")
	if err != nil {
		return false
	}
	bit := uint64(1) << (uint(sig) - 1)
	for _, field := range []string{"SigBlk:", "SigIgn:", "SigCgt:"} {
		if mask, ok := statusMask(b, field); !ok || mask&bit != 0 {
			return false
		}
	}
	return unix.PidfdSendSignal(l.pidfd, 0, nil, 0) == nil
}

// statusMask reads a hex signal mask line of /proc/PID/status.
func statusMask(status []byte, field string) (uint64, bool) {
	i := bytes.Index(status, []byte("\n"+field))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(status[i+1+len(field):], " \t")
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	v, err := strconv.ParseUint(string(rest), 16, 64)
	return v, err == nil
}

// terminatesByDefault lists the signals whose default action ends a
// process without a core dump or stop, the ones a run is stopped with.
func terminatesByDefault(sig syscall.Signal) bool {
	switch sig {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGUSR1, syscall.SIGUSR2,
		syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGQUIT:
		return true
	}
	return false
}

// ExitSignal is the signal a wait status reports, as the run should: the
// applied signal for the SIGKILL that stood in for it.
func (l *NamespaceInit) ExitSignal(sig syscall.Signal) syscall.Signal {
	if l != nil && sig == syscall.SIGKILL {
		if a := l.applied.Load(); a != 0 {
			return syscall.Signal(a)
		}
	}
	return sig
}

// Wrap adds the init's signal rule to a run's signal hook (which signals
// the run's processes, the init included).
func (l *NamespaceInit) Wrap(signal func(syscall.Signal) error) func(syscall.Signal) error {
	return func(sig syscall.Signal) error {
		err := signal(sig)
		if sig != syscall.SIGKILL {
			l.Signal(sig)
		}
		return err
	}
}

// Kill sends SIGKILL to the init, which ends every process of its pid
// namespace.
func (l *NamespaceInit) Kill() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pidfd >= 0 {
		_ = unix.PidfdSendSignal(l.pidfd, unix.SIGKILL, nil, 0)
	}
}

// Pid is the init's pid (0 for a nil NamespaceInit).
func (l *NamespaceInit) Pid() int {
	if l == nil {
		return 0
	}
	return l.pid
}
