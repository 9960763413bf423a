//go:build linux

package namespace

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
)

// leader is a forked run's program process, pid 1 of its own pid
// namespace. The kernel spares a namespace's init from every signal it has
// no handler for, SIGKILL from outside excepted; a program that ran as pid
// 2 (a cold or whole runner's) would die of them. So that a forked run
// ends the same way, a terminating signal the program neither handles,
// ignores nor blocks is applied as SIGKILL, and its wait status is
// reported as that signal. The pidfd keeps the signal from reaching a
// process that reused the pid. Safe for concurrent use.
type leader struct {
	pid   int
	mu    sync.Mutex // guards pidfd against close
	pidfd int
	// applied is the signal applied as SIGKILL (0: none).
	applied atomic.Int32
}

// openLeader opens the program of a forked runner that said "R": the
// only process in its run cgroup.
func openLeader(cg *cgroup.Group) (*leader, error) {
	pids := cg.Pids()
	if len(pids) != 1 {
		return nil, errors.New("forked runner: want one process in its cgroup, found " + strconv.Itoa(len(pids)))
	}
	fd, err := unix.PidfdOpen(pids[0], 0)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	return &leader{pid: pids[0], pidfd: fd}, nil
}

// close releases the pidfd; later signals do nothing.
func (l *leader) close() {
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

// signal applies sig as it would act on a process that is not an init:
// a terminating signal with its default action becomes SIGKILL.
func (l *leader) signal(sig syscall.Signal) {
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
func (l *leader) defaultAction(sig syscall.Signal) bool {
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

// exitAs is the wait status's signal as the run should report it: the
// applied signal for the SIGKILL that stood in for it.
func (l *leader) exitAs(sig syscall.Signal) syscall.Signal {
	if l != nil && sig == syscall.SIGKILL {
		if a := l.applied.Load(); a != 0 {
			return syscall.Signal(a)
		}
	}
	return sig
}

// wrap adds the program's signal rule to a run's signal hook.
func (l *leader) wrap(signal func(syscall.Signal) error) func(syscall.Signal) error {
	return func(sig syscall.Signal) error {
		err := signal(sig)
		if sig != syscall.SIGKILL {
			l.signal(sig)
		}
		return err
	}
}
