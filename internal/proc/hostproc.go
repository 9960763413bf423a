package proc

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// HostProc is a started run backed by one host child (the program itself, or a
// launcher such as bwrap or a container CLI). It owns the stdio pipes: output
// is copied by goroutines that end at EOF, so a background grandchild that
// keeps a pipe open cannot block Wait; Release kills the tree and then waits
// for the copies. Backends plug in how the tree is signalled and cleaned.
// It has the methods of sandbox.Process.
//
// Backends build one with Start, Launch or Adopt.
type HostProc struct {
	cmd      *exec.Cmd
	wait     func() error
	copies   sync.WaitGroup
	closers  []func()
	stdinW   *os.File
	hooks    Hooks
	waitOnce sync.Once
	exit     Exit
	waitErr  error
	released bool
	mu       sync.Mutex
	// exitOf gives the exit when the child's own status is not the one to
	// report (SetExit): a runner forked by a zygote (cmd is nil), or one
	// whose stub reported its status early.
	exitOf func() Exit
	// deferKill: the program ended and reported; Release leaves the kill of
	// anything left to the Cleanup hook, off the caller's path.
	deferKill bool
	// path is how the sandbox was obtained (SetPath); measureTree: the
	// child's reaped tree is the run's own (MeasureTree).
	path        string
	measureTree bool
}

// Hooks customise a HostProc. Nil hooks fall back to signalling the child's
// process group.
type Hooks struct {
	// Signal delivers sig to every process of the run.
	Signal func(sig syscall.Signal) error
	// AfterWait may refine the exit (e.g. OOM detection from a cgroup).
	AfterWait func(e *Exit)
	// Cleanup runs in Release after the tree is killed.
	Cleanup func() error
	// Read, where the backend can, reads the run's counters while it
	// runs (its cgroup's), restarting the peak memory from the current
	// use when resetPeak is set (see Reading).
	Read func(resetPeak bool) Reading
}

// Start starts cmd (whose Stdin/Stdout/Stderr must be unset) with the
// given stdio and hooks. cmd.SysProcAttr is used as given; callers normally
// set Setpgid so the default Signal reaches the whole group.
func Start(cmd *exec.Cmd, stdin io.Reader, stdout, stderr io.Writer, hooks Hooks) (*HostProc, error) {
	return Launch(cmd, stdin, stdout, stderr, hooks, func(stdio [3]*os.File) (func() error, error) {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
		return StartTracked(cmd)
	})
}

// Launch prepares the stdio pipes and hands the child ends to launch,
// which starts the child (or hands them to an already running launcher whose
// command is cmd) and returns how to wait for it.
func Launch(cmd *exec.Cmd, stdin io.Reader, stdout, stderr io.Writer, hooks Hooks,
	launch func(stdio [3]*os.File) (func() error, error)) (*HostProc, error) {
	p := &HostProc{cmd: cmd, hooks: hooks}
	var stdio [3]*os.File
	var childEnds []*os.File
	ok := false
	defer func() {
		for _, f := range childEnds {
			_ = f.Close()
		}
		if !ok {
			p.closeAll()
		}
	}()
	for i, w := range []io.Writer{stdout, stderr} {
		wr, copyFn, closeRead, err := pipeOut(w)
		if err != nil {
			return nil, err
		}
		childEnds = append(childEnds, wr)
		p.closers = append(p.closers, closeRead)
		p.copies.Add(1)
		go func() { defer p.copies.Done(); copyFn() }()
		stdio[i+1] = wr
	}
	in, err := p.stdinFile(stdin)
	if err != nil {
		return nil, err
	}
	childEnds = append(childEnds, in)
	stdio[0] = in
	wait, err := launch(stdio)
	if err != nil {
		return nil, err
	}
	p.wait = wait
	ok = true
	return p, nil
}

// Adopt wraps a child that is already running with stdio pipes made
// in advance (a warm runner): stdinW, stdoutR and stderrR are the server
// ends. Output copies start now; stdin is fed from stdin (or closed).
func Adopt(cmd *exec.Cmd, wait func() error, stdinW, stdoutR, stderrR *os.File,
	stdin io.Reader, stdout, stderr io.Writer, hooks Hooks) *HostProc {
	p := &HostProc{cmd: cmd, wait: wait, hooks: hooks}
	for _, c := range []struct {
		r *os.File
		w io.Writer
	}{{stdoutR, stdout}, {stderrR, stderr}} {
		r, w := c.r, c.w
		if w == nil {
			w = io.Discard
		}
		p.closers = append(p.closers, func() { _ = r.Close() })
		p.copies.Add(1)
		go func() { defer p.copies.Done(); _, _ = io.Copy(w, r); _ = r.Close() }()
	}
	if stdin == nil {
		_ = stdinW.Close()
		return p
	}
	p.stdinW = stdinW
	go p.feedStdin(stdinW, stdin)
	return p
}

// feedStdin copies stdin into w and closes it, unless Release did first.
func (p *HostProc) feedStdin(w *os.File, stdin io.Reader) {
	_, _ = io.Copy(w, stdin)
	p.mu.Lock()
	if !p.released {
		_ = w.Close()
		p.stdinW = nil
	}
	p.mu.Unlock()
}

// stdinFile returns the child's stdin: a pipe fed by a goroutine that stops
// when the data is written or the pipe is closed. Without stdin it is a pipe
// already at its end, not /dev/null: a warm runner's stdin is a pipe that
// is closed, and a program must see the same kind of file on every path
// (a pipe is not seekable, /dev/null is; node makes a net.Socket of one and
// an fs.ReadStream of the other).
func (p *HostProc) stdinFile(stdin io.Reader) (*os.File, error) {
	if f, ok := stdin.(*os.File); ok {
		return f, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	if stdin == nil {
		return r, w.Close()
	}
	p.stdinW = w
	go p.feedStdin(w, stdin)
	return r, nil
}

// Pid returns the host pid of the child (0 for a forked runner, which is not
// the server's child).
func (p *HostProc) Pid() int {
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Wait waits for the child to exit. It does not wait for output copies.
func (p *HostProc) Wait() (Exit, error) {
	p.waitOnce.Do(func() {
		err := p.wait()
		if p.exitOf != nil {
			p.exit = p.exitOf()
		} else {
			p.exit = ExitFrom(p.cmd.ProcessState)
		}
		if p.measureTree && p.exitOf == nil {
			p.exit.Usage, _ = rusageOf(p.cmd.ProcessState)
		}
		p.exit.Usage.Path = p.path
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil
		}
		p.waitErr = err
		if p.hooks.AfterWait != nil {
			p.hooks.AfterWait(&p.exit)
		}
	})
	return p.exit, p.waitErr
}

// ExitFrom is how a reaped child ended (Code -1 with the signal if one
// killed it; Code -1 alone if ps is nil).
func ExitFrom(ps *os.ProcessState) Exit {
	if ps == nil {
		return Exit{Code: -1}
	}
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		return Exit{Code: -1, Signal: int(ws.Signal())}
	}
	return Exit{Code: ps.ExitCode()}
}

// Terminate sends SIGTERM to the run.
func (p *HostProc) Terminate() error { return p.signal(syscall.SIGTERM) }

// Kill sends SIGKILL to the run.
func (p *HostProc) Kill() error { return p.signal(syscall.SIGKILL) }

// KillLeader sends SIGKILL to the child itself, not to its group or cgroup:
// for a run still on its way into its sandbox, whose cgroup is empty until
// the child joins it. os.Process never signals a reaped pid, so a reused
// pid is safe. A forked runner (no child of ours) is left alone.
func (p *HostProc) KillLeader() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
}

func (p *HostProc) signal(sig syscall.Signal) error {
	if p.hooks.Signal != nil {
		return p.hooks.Signal(sig)
	}
	if p.cmd == nil {
		return nil
	}
	err := syscall.Kill(-p.cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Release kills what is left of the run, waits up to drainTimeout for output
// to drain, then closes pipes and runs the backend cleanup.
func (p *HostProc) Release(drainTimeout time.Duration) error {
	if !p.deferKill {
		_ = p.Kill()
	}
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainTimeout):
	}
	p.closeAll()
	<-done
	if p.hooks.Cleanup != nil {
		return p.hooks.Cleanup()
	}
	return nil
}

// SetWait replaces how the run is waited for (a runner whose stub reports
// the status itself). Call it before Wait.
func (p *HostProc) SetWait(wait func() error) { p.wait = wait }

// SetPath records how the run's sandbox was obtained (PathWarm,
// PathForked, PathCold), reported in its Exit's Usage. Call it before
// anything may call Wait: Wait reads it without a lock.
func (p *HostProc) SetPath(path string) { p.path = path }

// Path is what SetPath recorded ("" when nothing did). The backends set
// it before their Start returns, so the caller of Start may read it then.
func (p *HostProc) Path() string { return p.path }

// Read reads the run's counters while it runs (Hooks.Read); false when
// its backend cannot.
func (p *HostProc) Read(resetPeak bool) (Reading, bool) {
	if p.hooks.Read == nil {
		return Reading{}, false
	}
	return p.hooks.Read(resetPeak), true
}

// MeasureTree says that the child and what it reaps are the run's own
// processes and nothing else (not a container CLI, not a runner started
// before the run), so the kernel's accounting of its tree (wait4's rusage)
// is the run's usage. Call it before Wait.
func (p *HostProc) MeasureTree() { p.measureTree = true }

// SetExit makes exit the source of the run's exit instead of the child's
// own status. Call it before Wait.
func (p *HostProc) SetExit(exit func() Exit) { p.exitOf = exit }

// Hooks returns the run's hooks for adjustment before Wait and Release.
func (p *HostProc) Hooks() *Hooks { return &p.hooks }

// OutputDone returns a channel closed once both outputs have ended.
func (p *HostProc) OutputDone() <-chan struct{} {
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	return done
}

// DeferKill makes Release leave the kill of what is left of the run to the
// Cleanup hook (off the caller's path): for a run that ended and reported.
// Call it from the wait function, before Wait returns.
func (p *HostProc) DeferKill() { p.deferKill = true }

func (p *HostProc) closeAll() {
	p.mu.Lock()
	p.released = true
	if p.stdinW != nil {
		_ = p.stdinW.Close()
		p.stdinW = nil
	}
	p.mu.Unlock()
	for _, c := range p.closers {
		c()
	}
}

// pipeOut returns a writable *os.File for w and a function that copies what
// the child writes into w until EOF. If w is nil, output is discarded via
// /dev/null. The caller closes the write end after starting the child.
func pipeOut(w io.Writer) (wr *os.File, copyFn func(), closeRead func(), err error) {
	if w == nil {
		f, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		return f, func() {}, func() {}, err
	}
	r, wr, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	return wr, func() { _, _ = io.Copy(w, r); _ = r.Close() }, func() { _ = r.Close() }, nil
}
