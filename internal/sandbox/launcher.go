package sandbox

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/codexec/codexec/internal/proc"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
)

// Pooled launchers (not to be confused with warm runners, warm.go, which
// start the interpreter too). Moving a process into a cgroup v1 hierarchy
// waits for an RCU grace period (~10 ms on a busy 2-CPU VM), which is most of
// the namespace overhead. The launcher pool hides it: it keeps a few sandbox-init launchers already placed in a
// fresh cgroup with the run limits and already unprivileged, each waiting on
// a control socket. Start hands one the run's stdio, extra descriptors, argv
// and environment; it execs bwrap at once.

// launcherPoolSize is how many launchers are kept ready.
const launcherPoolSize = 2

// fdRef marks an argument that must be replaced by the launcher's number for
// extra descriptor K ("\x00fd:K").
const fdRef = "\x00fd:"

// launcher is one pooled sandbox-init, already in its cgroup and
// unprivileged, waiting on ctl for its command.
type launcher struct {
	cmd  *exec.Cmd
	wait func() error
	cg   *cgroup.Group
	ctl  *os.File
}

// launcherPool keeps launcherPoolSize launchers ready for one set of limits
// (the last asked for).
type launcherPool struct {
	n       *Namespace
	mu      sync.Mutex
	lim     Limits
	ready   []*launcher
	filling int
	closed  bool
}

// take returns a ready launcher for lim, or nil, and starts refilling.
func (pl *launcherPool) take(lim Limits) *launcher {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return nil
	}
	var stale []*launcher
	if lim != pl.lim {
		stale, pl.ready, pl.lim = pl.ready, nil, lim
	}
	var w *launcher
	if len(pl.ready) > 0 {
		w, pl.ready = pl.ready[0], pl.ready[1:]
	} else {
		pl.refillLocked()
	}
	go discardLaunchers(stale)
	return w
}

// refill tops the pool up in the background. Runs call it when they end,
// so starting launchers does not compete for CPU with the run itself.
func (pl *launcherPool) refill() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.refillLocked()
}

func (pl *launcherPool) refillLocked() {
	for !pl.closed && len(pl.ready)+pl.filling < launcherPoolSize {
		pl.filling++
		go pl.spawn(pl.lim)
	}
}

func (pl *launcherPool) spawn(lim Limits) {
	w, err := pl.n.newLauncher(lim, "pool-"+strconv.FormatInt(runSeq.Add(1), 10)+"-"+strconv.Itoa(os.Getpid()))
	pl.mu.Lock()
	pl.filling--
	keep := err == nil && !pl.closed && lim == pl.lim
	if keep {
		pl.ready = append(pl.ready, w)
	}
	pl.mu.Unlock()
	if err == nil && !keep {
		discardLaunchers([]*launcher{w})
	}
}

func (pl *launcherPool) close() {
	pl.mu.Lock()
	pl.closed = true
	ready := pl.ready
	pl.ready = nil
	pl.mu.Unlock()
	discardLaunchers(ready)
}

func discardLaunchers(ws []*launcher) {
	for _, w := range ws {
		_ = w.ctl.Close()
		_ = w.cmd.Process.Kill()
		_ = w.wait()
		_ = w.cg.Destroy()
	}
}

// newLauncher starts one pooled launcher in a new cgroup.
func (n *Namespace) newLauncher(lim Limits, name string) (*launcher, error) {
	cg, err := cgroup.New(n.cg, name, cgroup.Limits{MemoryBytes: lim.MemoryBytes, CPUs: lim.CPUs, Pids: lim.Pids})
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	ctl, child := os.NewFile(uintptr(fds[0]), "ctl"), os.NewFile(uintptr(fds[1]), "ctl-child")
	defer child.Close()
	args := []string{InitCommand, "--pooled", strconv.Itoa(n.opts.UID), strconv.Itoa(n.opts.GID)}
	cmd := exec.Command(n.opts.Exe, append(args, cg.ProcsFiles()...)...)
	cmd.Args[0] = "codexec"
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		_ = ctl.Close()
		_ = cg.Destroy()
		return nil, err
	}
	return &launcher{cmd: cmd, wait: wait, cg: cg, ctl: ctl}, nil
}

type launchMsg struct {
	Argv []string
	Env  []string
}

// send hands the launcher its stdio (fds 0–2), extra descriptors and
// command. Arguments equal to fdRef+K name extra descriptor K.
func (w *launcher) send(argv, env []string, stdio [3]*os.File, extra []*os.File) error {
	payload, err := json.Marshal(launchMsg{Argv: argv, Env: env})
	if err != nil {
		return err
	}
	var fds []int
	for _, f := range append(stdio[:], extra...) {
		fds = append(fds, int(f.Fd()))
	}
	hdr := binary.LittleEndian.AppendUint64(nil, uint64(len(payload)))
	raw, err := w.ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), hdr, unix.UnixRights(fds...), nil, 0)
		return true
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("pooled launcher: %w", serr)
	}
	_, err = w.ctl.Write(payload)
	return err
}

// receiveLaunch is the launcher side of send: it reads the command from fd 3,
// puts stdio on 0–2, and returns argv (with descriptor references resolved)
// and env. Only raw system calls are used, so the Go runtime's own
// descriptors are never disturbed before exec.
func receiveLaunch() (argv, env []string, err error) {
	hdr := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(64*4))
	n, oobn, _, _, err := unix.Recvmsg(3, hdr, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 8 {
		return nil, nil, fmt.Errorf("control message: %v (n=%d)", err, n)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, nil, errors.New("control message without descriptors")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) < 3 {
		return nil, nil, errors.New("control message: bad descriptors")
	}
	payload := make([]byte, binary.LittleEndian.Uint64(hdr))
	for got := 0; got < len(payload); {
		m, err := unix.Read(3, payload[got:])
		if err != nil || m == 0 {
			return nil, nil, fmt.Errorf("control payload: %v", err)
		}
		got += m
	}
	var msg launchMsg
	if err := json.Unmarshal(payload, &msg); err != nil {
		return nil, nil, err
	}
	for i := 0; i < 3; i++ {
		if err := unix.Dup3(fds[i], i, 0); err != nil {
			return nil, nil, err
		}
	}
	for i, a := range msg.Argv {
		if k, ok := cutFdRef(a); ok && k >= 0 && 3+k < len(fds) {
			fd := fds[3+k]
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
				return nil, nil, err
			}
			msg.Argv[i] = strconv.Itoa(fd)
		}
	}
	return msg.Argv, msg.Env, nil
}

func cutFdRef(a string) (int, bool) {
	if len(a) <= len(fdRef) || a[:len(fdRef)] != fdRef {
		return 0, false
	}
	k, err := strconv.Atoi(a[len(fdRef):])
	return k, err == nil
}
