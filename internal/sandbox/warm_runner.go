package sandbox

import (
	"errors"
	"fmt"
	"github.com/codexec/codexec/internal/proc"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
)

// warmDir is the placeholder a namespace runner has where its workspace
// will be bound; its Landlock rule grants full access beneath it.
const warmDir = "/.workspace"

// runnerReadyTimeout bounds a runner's start-up (node under load is the
// slow one).
const runnerReadyTimeout = 20 * time.Second

// warmRunner is what the warm pool keeps: one started runner of a
// backend's own type (nsRunner, ctRunner, subRunner), used at most once.
type warmRunner interface {
	// memory is what the ready runner holds, for the pool's memory cap.
	memory() int64
	// destroy stops an unused runner and frees everything it holds.
	destroy()
}

// stubRunner is what every runner has: an interpreter started with its
// stub, waiting on a control socket for one run.
type stubRunner struct {
	cmd  *exec.Cmd
	wait func() error
	// ctl is the server end of the control socket (the stub's fd 3).
	ctl *os.File
	// stdin, stdout, stderr are the server ends of the runner's stdio pipes.
	stdin, stdout, stderr *os.File
	mem                   int64
}

func (r *stubRunner) memory() int64 { return r.mem }

func (r *stubRunner) closeFiles() {
	for _, f := range []*os.File{r.ctl, r.stdin, r.stdout, r.stderr} {
		if f != nil {
			_ = f.Close()
		}
	}
}

// killGroup kills the runner's process group and reaps its process.
func (r *stubRunner) killGroup() {
	if r.cmd != nil && r.cmd.Process != nil {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = r.wait()
}

// nsRunner is a namespace runner: its run cgroup, staging mounts and
// mount namespace besides the stub.
type nsRunner struct {
	stubRunner
	cg    *cgroup.Group
	st    *stage
	mntns *os.File
	// forked runners come from a zygote: cmd is nil, and exit is what wait
	// read from the control socket.
	forked bool
	exit   Exit
}

func (r *nsRunner) destroy() {
	r.closeFiles()
	_ = r.cg.Kill()
	_ = r.wait()
	_ = r.cg.Destroy()
	_ = r.st.release()
}

func (r *nsRunner) closeFiles() {
	r.stubRunner.closeFiles()
	if r.mntns != nil {
		_ = r.mntns.Close()
	}
}

// runnerPipes are the stdio pipes and control socket of a runner being
// started: child ends go to the process, server ends to the runner.
type runnerPipes struct {
	child [4]*os.File // stdin, stdout, stderr, ctl
	r     stubRunner
}

func newRunnerPipes() (*runnerPipes, error) {
	rp := &runnerPipes{}
	var err error
	if rp.child[0], rp.r.stdin, err = os.Pipe(); err != nil {
		return nil, err
	}
	if rp.r.stdout, rp.child[1], err = os.Pipe(); err != nil {
		rp.close()
		return nil, err
	}
	if rp.r.stderr, rp.child[2], err = os.Pipe(); err != nil {
		rp.close()
		return nil, err
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		rp.close()
		return nil, err
	}
	// Non-blocking on the server end only, so reads can time out.
	_ = unix.SetNonblock(fds[0], true)
	rp.r.ctl, rp.child[3] = os.NewFile(uintptr(fds[0]), "runner-ctl"), os.NewFile(uintptr(fds[1]), "runner-ctl-child")
	return rp, nil
}

// closeChild closes the child ends (after the process started).
func (rp *runnerPipes) closeChild() {
	for _, f := range rp.child {
		if f != nil {
			_ = f.Close()
		}
	}
}

func (rp *runnerPipes) close() {
	rp.closeChild()
	rp.r.closeFiles()
}

// awaitReady waits for the stub's "R" on the control socket.
func (r *stubRunner) awaitReady() error {
	_ = r.ctl.SetReadDeadline(time.Now().Add(runnerReadyTimeout))
	b := make([]byte, 1)
	n, err := r.ctl.Read(b)
	_ = r.ctl.SetReadDeadline(time.Time{})
	if err != nil || n != 1 || b[0] != 'R' {
		return fmt.Errorf("runner did not get ready: %v", err)
	}
	return nil
}

// startRunner is the pool's starter of namespace runners (newRunner).
func (n *Namespace) startRunner(req warmRequest) (warmRunner, error) {
	r, err := n.newRunner(req)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newRunner starts a namespace runner for req: a fresh cgroup (low CPU
// weight until taken), a bwrap sandbox whose workspace is the placeholder
// warmDir, and the interpreter with its stub, and waits until it is ready.
func (n *Namespace) newRunner(req warmRequest) (*nsRunner, error) {
	if req.fork {
		return n.forkRunner(req)
	}
	name := "warm-" + strconv.FormatInt(runSeq.Add(1), 10) + "-" + strconv.Itoa(os.Getpid())
	spec := req.base
	cg, err := cgroup.New(n.cg, name, cgroup.Limits{MemoryBytes: spec.Limits.MemoryBytes, CPUs: spec.Limits.CPUs, Pids: spec.Limits.Pids})
	if err != nil {
		return nil, err
	}
	_ = cg.SetCPUWeight(2)
	st, err := newStage(name)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	r, err := n.launchRunner(spec, cg, st)
	if err != nil {
		_ = cg.Destroy()
		_ = st.release()
		return nil, err
	}
	return r, nil
}

func (n *Namespace) launchRunner(spec Spec, cg *cgroup.Group, st *stage) (*nsRunner, error) {
	rp, err := newRunnerPipes()
	if err != nil {
		return nil, err
	}
	defer rp.closeChild()
	b := &bwrapArgs{n: n, stage: st, warm: true, files: []*os.File{rp.child[3]}}
	rp.child[3] = nil // closed with b's files
	defer b.closeFiles()
	if err := b.build(spec); err != nil {
		rp.close()
		return nil, err
	}
	cmd := n.coldCmd(spec, cg, append(append([]string{n.opts.Bwrap}, b.args...), spec.Argv...), b.files)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rp.child[0], rp.child[1], rp.child[2]
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		rp.close()
		return nil, err
	}
	rp.r.cmd, rp.r.wait = cmd, wait
	r := &nsRunner{stubRunner: rp.r, cg: cg, st: st}
	rp.closeChild()
	b.closeFiles()
	if err := r.awaitReady(); err != nil {
		r.st = nil // released by the caller
		r.destroyProcess()
		return nil, err
	}
	if r.mntns, err = sandboxMountNS(cg); err != nil {
		r.st = nil
		r.destroyProcess()
		return nil, err
	}
	r.mem = cg.MemoryCurrent()
	return r, nil
}

// destroyProcess kills and reaps the runner's processes without removing
// its cgroup (for start-up failures, where the caller removes it).
func (r *nsRunner) destroyProcess() {
	r.closeFiles()
	_ = r.cg.Kill()
	_ = r.wait()
}

// sandboxMountNS opens the mount namespace of the sandbox whose processes
// are in cg: the one that differs from the server's own.
func sandboxMountNS(cg *cgroup.Group) (*os.File, error) {
	self, err := hostMountNS()
	if err != nil {
		return nil, err
	}
	for _, pid := range cg.Pids() {
		p := "/proc/" + strconv.Itoa(pid) + "/ns/mnt"
		if ns, err := os.Readlink(p); err == nil && ns != self {
			return os.Open(p)
		}
	}
	return nil, errors.New("runner: no process in the sandbox's mount namespace")
}
