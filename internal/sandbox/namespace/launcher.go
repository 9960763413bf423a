//go:build linux

package namespace

import (
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// sandbox.Pooled launchers (not to be confused with warm runners, warm.go, which
// start the interpreter too). Moving a process into a cgroup v1 hierarchy
// waits for an RCU grace period (~10 ms on a busy 2-CPU VM), which is most of
// the namespace overhead. The launcher pool hides it: it keeps a few sandbox-init launchers already placed in a
// fresh cgroup with the run limits and already unprivileged, each waiting on
// a control socket. Start hands one the run's stdio, extra descriptors, argv
// and environment; it execs bwrap at once.

// launcherPoolSize is how many launchers are kept ready.
const launcherPoolSize = 2

// launcher is one pooled sandbox-init, already in its cgroup and
// unprivileged, waiting on ctl for its command.
type launcher struct {
	cmd  *exec.Cmd
	wait func() error
	cg   *cgroup.Group
	ctl  *os.File
	// ownNet: started in a network namespace of its own (the backend
	// captures networks), which it sets up when launched.
	ownNet bool
}

// launcherPool keeps launcherPoolSize launchers ready for one set of limits
// (the last asked for).
type launcherPool struct {
	n       *Backend
	mu      sync.Mutex
	lim     sandbox.Limits
	ready   []*launcher
	filling int
	closed  bool
}

// take returns a ready launcher for lim, or nil, and starts refilling.
func (pl *launcherPool) take(lim sandbox.Limits) *launcher {
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

func (pl *launcherPool) spawn(lim sandbox.Limits) {
	w, err := pl.n.newLauncher(lim, "pool-"+strconv.FormatInt(runSeq.Add(1), 10))
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
func (n *Backend) newLauncher(lim sandbox.Limits, name string) (*launcher, error) {
	cg, err := n.newGroup(name, lim)
	if err != nil {
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	// Non-blocking on the server's end, so the wait for captured sockets
	// can time out.
	_ = unix.SetNonblock(fds[0], true)
	ctl, child := os.NewFile(uintptr(fds[0]), "ctl"), os.NewFile(uintptr(fds[1]), "ctl-child")
	defer child.Close()
	args := []string{helper.InitCommand, "--pooled", strconv.Itoa(n.hostUID), strconv.Itoa(n.hostGID)}
	cmd := exec.Command(n.opts.Exe, append(args, cg.ProcsFiles()...)...)
	cmd.Args[0] = "codexec"
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{child}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	ownNet := n.capturing()
	if ownNet {
		// Made now, at no cost to the run: bwrap shares it instead of
		// making one (capture.go).
		newNet(cmd)
	}
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		_ = ctl.Close()
		_ = cg.Destroy()
		return nil, err
	}
	return &launcher{cmd: cmd, wait: wait, cg: cg, ctl: ctl, ownNet: ownNet}, nil
}

// launch hands the launcher its stdio, extra descriptors, template plan
// and command (helper.SendLaunch), and closes its control socket. A
// launcher in a network namespace of its own sets loopback up there and,
// if capture, makes socks, whose Capture it returns.
func (w *launcher) launch(argv, env []string, plan string, socks helper.Sockets, capture bool, stdio [3]*os.File, extra []*os.File) (*sandbox.Capture, error) {
	defer w.ctl.Close()
	var net *helper.Sockets
	if w.ownNet {
		net = &helper.Sockets{}
		if capture {
			net = &socks
		}
	}
	if err := helper.SendLaunch(w.ctl, argv, env, plan, net, stdio, extra); err != nil || !capture {
		return nil, err
	}
	return receiveCapture(w.ctl, helper.CaptureTag, socks)
}
