//go:build linux

package namespace

import (
	"errors"
	"os"
	"os/exec"
	"strconv"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/staging"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// nsRunner is a namespace runner: its run cgroup, staging mounts and
// mount namespace besides the stub.
type nsRunner struct {
	warm.Stub
	cg    *cgroup.Group
	st    *staging.Stage
	mntns *os.File
	// forked runners come from a zygote: cmd is nil, and exit is what wait
	// read from the control socket.
	forked bool
	exit   sandbox.Exit
	// lead is a forked runner's program (nil for the others).
	lead *proc.NamespaceInit
	// capture is the runner's sockets (capture.go) until a run takes them
	// (takeCapture); nil when the backend captures no network.
	capture *sandbox.Capture
}

// takeCapture hands over the runner's sockets: the taking run serves or
// closes them.
func (r *nsRunner) takeCapture() *sandbox.Capture {
	c := r.capture
	r.capture = nil
	return c
}

func (r *nsRunner) Destroy() {
	r.CloseFiles()
	r.kill()
	_ = r.Wait()
	_ = r.cg.Destroy()
	_ = r.st.Release()
}

func (r *nsRunner) CloseFiles() {
	r.Stub.CloseFiles()
	_ = r.takeCapture().Close()
	r.lead.Close()
	if r.mntns != nil {
		_ = r.mntns.Close()
	}
}

// launchRunner starts the runner of spec in cg: its interpreter and stub,
// or for an exec runner (exec) the Landlock step as the stub.
func (n *Backend) launchRunner(spec sandbox.Spec, cg *cgroup.Group, st *staging.Stage, exec bool) (*nsRunner, error) {
	rp, err := warm.NewPipes()
	if err != nil {
		return nil, err
	}
	defer rp.CloseChild()
	b := &bwrapArgs{n: n, stage: st, warm: true, exec: exec, files: []*os.File{rp.Child[3]}, ownNet: n.capturing()}
	rp.Child[3] = nil // closed with b's files
	defer b.CloseFiles()
	if err := b.build(spec); err != nil {
		rp.Close()
		return nil, err
	}
	cmd := n.coldCmd(spec, cg, append(append([]string{n.opts.Bwrap}, b.args...), spec.Argv...), b.files, b.plan)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = rp.Child[0], rp.Child[1], rp.Child[2]
	wait, c, err := n.startRunnerInit(cmd)
	if err != nil {
		rp.Close()
		return nil, err
	}
	rp.R.Cmd, rp.R.Wait = cmd, wait
	r := &nsRunner{Stub: rp.R, cg: cg, st: st, capture: c}
	rp.CloseChild()
	b.CloseFiles()
	if err := r.AwaitReady(); err != nil {
		r.st = nil // released by the caller
		r.destroyProcess()
		return nil, err
	}
	if r.mntns, err = sandboxMountNS(cg, cmd.Process.Pid); err != nil {
		r.st = nil
		r.destroyProcess()
		return nil, err
	}
	r.Mem = cg.MemoryCurrent()
	return r, nil
}

// startRunnerInit starts a runner's sandbox-init, with the backend's
// sockets (kept for the run that takes the runner) if it captures networks.
func (n *Backend) startRunnerInit(cmd *exec.Cmd) (func() error, *sandbox.Capture, error) {
	if !n.capturing() {
		wait, err := proc.StartTracked(cmd)
		return wait, nil, err
	}
	return startCaptured(cmd, n.sockets())
}

// destroyProcess kills and reaps the runner's processes without removing
// its cgroup (for start-up failures, where the caller removes it).
func (r *nsRunner) destroyProcess() {
	r.CloseFiles()
	r.kill()
	_ = r.Wait()
}

// sandboxMountNS opens the mount namespace of the sandbox whose processes
// are in cg: the one that differs from the server's own and from that of
// the outer bwrap (pid bwrap; 0 if none), which in template mode is a
// private copy of the template.
func sandboxMountNS(cg *cgroup.Group, bwrap int) (*os.File, error) {
	pids := cg.Pids()
	if cg == nil {
		pids = descendants(bwrap)
	}
	self, err := warm.HostMountNS()
	if err != nil {
		return nil, err
	}
	outer := ""
	if bwrap > 0 {
		outer, _ = os.Readlink("/proc/" + strconv.Itoa(bwrap) + "/ns/mnt")
	}
	for _, pid := range pids {
		p := "/proc/" + strconv.Itoa(pid) + "/ns/mnt"
		if ns, err := os.Readlink(p); err == nil && ns != self && ns != outer {
			return os.Open(p)
		}
	}
	return nil, errors.New("runner: no process in the sandbox's mount namespace")
}
