package warm

import (
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// Early results from python warm runners. A run used to end for the server
// when bwrap exited: after the program's exit had freed its address space
// (~2 ms for a python on a VM) and bwrap's init and monitor had exited in
// turn, tearing down the sandbox's namespaces (~2 ms more). Instead the run
// gets stdout and stderr pipes of its own at take time (handOverStdio: only
// the program and its children hold them, bwrap never does), and the stub's
// last act before _exit is to close them and write the exit status on its
// control socket (python_run.py). The server has the result once it has
// that status and the end of both outputs, and the teardown finishes in the
// background (lateCleanup).
//
// Nothing changes for a program that ends otherwise (os._exit, a signal,
// the OOM killer, a timeout): no status comes, and the run ends when bwrap
// exits, as before. Neither does anything for children that keep an output
// open: the output ends only when they do, that is when bwrap's init exits
// and the kernel kills what is left of the sandbox. A program that writes a
// status of its own only ends its own run early; its processes are killed.
//
// An exec runner's stub (bash) becomes the program, so no status comes
// before the program's exit; its run ends when bwrap exits (AttachExec),
// which bwrap does as soon as the program has (its init reports the status
// before it exits). With the pipes of handOverStdio the outputs end then
// too, and the kill and teardown still go to the background: bwrap's init
// dies with it (--die-with-parent) and takes the sandbox's processes along,
// so only the namespaces' teardown and the cgroup's removal are left.

// earlyStatusGrace is how long the background cleanup of an early-ended run
// waits for bwrap to exit on its own before it kills the sandbox.
const earlyStatusGrace = 500 * time.Millisecond

// handOverStdio gives the runner fresh stdout and stderr pipes with the
// byte "F" (SCM_RIGHTS on its control socket) and returns the server's ends.
// The runner's start-up pipes are closed: bwrap keeps them, so they would
// end only with the sandbox.
func (r *Stub) HandOverStdio() (outR, errR *os.File, err error) {
	outR, outW, err := pipe(false)
	if err != nil {
		return nil, nil, err
	}
	defer outW.Close()
	errR, errW, err := pipe(false)
	if err != nil {
		_ = outR.Close()
		return nil, nil, err
	}
	defer errW.Close()
	if err := sendFiles(r.Ctl, []byte("F"), outW, errW); err != nil {
		_, _ = outR.Close(), errR.Close()
		return nil, nil, err
	}
	_, _ = r.Stdout.Close(), r.Stderr.Close()
	r.Stdout, r.Stderr = nil, nil
	return outR, errR, nil
}

// sendFiles writes msg with files attached (SCM_RIGHTS) on the socket f.
func sendFiles(f *os.File, msg []byte, files ...*os.File) error {
	fds := make([]int, len(files))
	for i, file := range files {
		fds[i] = int(file.Fd())
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	err = rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), msg, unix.UnixRights(fds...), nil, 0)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// Early is the state of a run that may end early.
type Early struct {
	r      *Stub
	kill   func()        // kills what is left of the run's sandbox
	reaped chan struct{} // closed once bwrap is reaped
	exit   sandbox.Exit  // the stub's status, if early
	early  bool
}

// NewEarly prepares a run of r that may end at the stub's status: hooks
// gets a Cleanup that runs in the background, counted in cleanups, after
// bwrap (or the CLI) is reaped; kill kills the sandbox's processes. Adopt
// the run's HostProc with those hooks, then Attach it.
func NewEarly(r *Stub, hooks proc.Hooks, cleanups *sync.WaitGroup, kill func()) (*Early, proc.Hooks) {
	e := &Early{r: r, kill: kill, reaped: make(chan struct{})}
	cleanup := hooks.Cleanup
	hooks.Cleanup = func() error {
		cleanups.Add(1)
		go func() {
			defer cleanups.Done()
			e.awaitReaped()
			_ = r.Ctl.Close()
			if cleanup != nil {
				_ = cleanup()
			}
		}()
		return nil
	}
	return e, hooks
}

// Attach sets p (adopted from the runner with the pipes of handOverStdio)
// up to end at the stub's status: its wait and exit.
func (e *Early) Attach(p *proc.HostProc) {
	r := e.r
	var bwErr error
	go func() { bwErr = r.Wait(); close(e.reaped) }()
	status := make(chan sandbox.Exit, 1)
	go func() {
		if code, ok := helper.ReadStatus(r.Ctl); ok {
			status <- sandbox.Exit{Code: code}
		}
	}()
	p.SetWait(func() error {
		copied := p.OutputDone()
		select {
		case <-e.reaped:
			return bwErr
		case ex := <-status:
			select {
			case <-copied:
				e.exit, e.early = ex, true
				p.DeferKill()
				return nil
			case <-e.reaped:
				return bwErr
			}
		}
	})
	p.SetExit(func() sandbox.Exit {
		if e.early {
			return e.exit
		}
		return proc.ExitFrom(r.Cmd.ProcessState)
	})
}

// AttachExec sets p (adopted from an exec runner with the pipes of
// handOverStdio) up to end when bwrap (or the runner's own process) exits
// with the program's status. Once both outputs have ended too, which they
// do as the sandbox dies (within earlyStatusGrace), the kill of what is
// left goes to the background cleanup, as for a status reported early.
func (e *Early) AttachExec(p *proc.HostProc) {
	r := e.r
	p.SetWait(func() error {
		err := r.Wait()
		close(e.reaped)
		t := time.NewTimer(earlyStatusGrace)
		defer t.Stop()
		select {
		case <-p.OutputDone():
			p.DeferKill()
		case <-t.C:
		}
		return err
	})
}

// Reported reports whether the run ended at the stub's own status (valid
// once Wait returned).
func (e *Early) Reported() bool { return e.early }

// awaitReaped waits for bwrap to exit, killing the sandbox if it has not
// within earlyStatusGrace (a program that reported a status of its own and
// went on).
func (e *Early) awaitReaped() {
	select {
	case <-e.reaped:
		return
	case <-time.After(earlyStatusGrace):
	}
	e.kill()
	<-e.reaped
}
