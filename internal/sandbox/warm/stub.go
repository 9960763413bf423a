package warm

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReadyTimeout bounds a runner's start-up (node under load is the
// slow one).
const ReadyTimeout = 20 * time.Second

// Runner is what the warm pool keeps: one started runner of a backend's
// own type (each backend's runner embeds a Stub and adds what it holds:
// cgroup and mounts, container, run marker), used at most once.
type Runner interface {
	// Memory is what the ready runner holds, for the pool's memory cap.
	Memory() int64
	// Destroy stops an unused runner and frees everything it holds.
	Destroy()
}

// Stub is what every runner has: an interpreter started with its
// stub, waiting on a control socket for one run.
type Stub struct {
	// Cmd is the runner's process (nil for a forked runner) and Wait
	// reaps it.
	Cmd  *exec.Cmd
	Wait func() error
	// Ctl is the server end of the control socket (the stub's fd 3).
	Ctl *os.File
	// Stdin, Stdout, Stderr are the server ends of the runner's stdio pipes.
	Stdin, Stdout, Stderr *os.File
	// Mem is what the ready runner holds (bytes).
	Mem int64
}

// Memory returns Mem.
func (r *Stub) Memory() int64 { return r.Mem }

// CloseFiles closes the server's ends of the control socket and stdio.
func (r *Stub) CloseFiles() {
	for _, f := range []*os.File{r.Ctl, r.Stdin, r.Stdout, r.Stderr} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// KillGroup kills the runner's process group and reaps its process.
func (r *Stub) KillGroup() {
	if r.Cmd != nil && r.Cmd.Process != nil {
		_ = syscall.Kill(-r.Cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = r.Wait()
}

// Pipes are the stdio pipes and control socket of a runner being
// started: child ends go to the process, server ends to the runner.
type Pipes struct {
	Child [4]*os.File // stdin, stdout, stderr, ctl
	R     Stub
}

// NewPipes makes a runner's pipes and control socket (the server's end
// non-blocking, so reads can time out).
func NewPipes() (*Pipes, error) {
	rp := &Pipes{}
	var err error
	if rp.R.Stdin, rp.Child[0], err = pipe(true); err != nil {
		return nil, err
	}
	if rp.R.Stdout, rp.Child[1], err = pipe(false); err != nil {
		rp.Close()
		return nil, err
	}
	if rp.R.Stderr, rp.Child[2], err = pipe(false); err != nil {
		rp.Close()
		return nil, err
	}
	fds, err := socketpair()
	if err != nil {
		rp.Close()
		return nil, err
	}
	// Non-blocking on the server end only, so reads can time out.
	_ = unix.SetNonblock(fds[0], true)
	rp.R.Ctl, rp.Child[3] = os.NewFile(uintptr(fds[0]), "runner-ctl"), os.NewFile(uintptr(fds[1]), "runner-ctl-child")
	return rp, nil
}

// CloseChild closes the child ends (after the process started).
func (rp *Pipes) CloseChild() {
	for _, f := range rp.Child {
		if f != nil {
			_ = f.Close()
		}
	}
}

// Close closes both ends of everything.
func (rp *Pipes) Close() {
	rp.CloseChild()
	rp.R.CloseFiles()
}

// AwaitReady waits for the stub's "R" on the control socket.
func (r *Stub) AwaitReady() error {
	_ = r.Ctl.SetReadDeadline(time.Now().Add(ReadyTimeout))
	b := make([]byte, 1)
	n, err := r.Ctl.Read(b)
	_ = r.Ctl.SetReadDeadline(time.Time{})
	if err != nil || n != 1 || b[0] != 'R' {
		return fmt.Errorf("runner did not get ready: %v", err)
	}
	return nil
}
