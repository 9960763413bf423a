package container

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/capture"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Warm containers (docker mode). A cold run pays ~100–150 ms of CLI, runtime
// and container set-up before python even starts. A warm container is that
// done ahead of time: a `run -i --rm` container, with the run's limits, whose
// python has started the warm runner stub (runner_python.py) and connected
// to a control socket the server listens on. The socket lies in a directory
// bound at /workspace — root-owned, mode 0711, so the sandbox user reaches
// the socket and nothing else — and is unlinked once connected. At take
// time the server, on the namespace worker thread, enters the container's
// mount namespace and mounts a clone of the run's workspace over
// /workspace, raises the container's CPU weight from the minimum it started
// with, and hands over fresh stdout and stderr pipes and the run, as in
// namespace mode (package warm: pool.go, early.go): the result is in once the stub
// reports its status, and the CLI's own exit and the container's removal
// finish in the background. A container serves one run and is removed.
//
// Entering the container's mount namespace needs the server to be root
// beside a rootful engine; where it cannot (rootless engines) the runner is
// destroyed and runs start cold. Node runners use FIFOs instead of the
// socket (warm_node_linux.go).

// serveWarm runs spec, which req describes, in a ready container runner,
// or cold when none is ready.
func (c *Backend) serveWarm(spec sandbox.Spec, req warm.Request) (sandbox.Process, error) {
	return c.runners.Pool.Serve(req, func(r warm.Runner) (*proc.HostProc, error) {
		p, err := c.startWarm(spec, req, r.(*ctRunner))
		if err == nil {
			p.SetPath(proc.PathWarm)
		}
		return p, err
	},
		func() (*proc.HostProc, error) { return c.startCold(spec) })
}

// ctlName is the control socket's name in a container runner's directory.
const ctlName = ".codexec-ctl"

// ctRunner is a container runner: the stub in its container and what a
// take needs of the container.
type ctRunner struct {
	warm.Stub
	// mntns is the container's mount namespace, where the workspace is
	// mounted at take time.
	mntns *os.File
	name  string    // container name
	dir   string    // host directory bound at /workspace until take
	cpu   cpuWeight // restored at take
	env   []string
	free  func()
	// node runners: their FIFOs and the attached CLI's stdin.
	node  *nodeFIFOs
	cliIn *os.File
	// deadline is the server's end of the deadline FIFO (life.go),
	// written and closed at take time.
	deadline *os.File
	// pid is the stub's host pid; capture, the sockets made in its
	// container's network namespace when the backend captures the network,
	// handed to the run's egress (or closed) at take time.
	pid     int
	capture *sandbox.Capture
}

func (r *ctRunner) CloseFiles() {
	r.Stub.CloseFiles()
	if r.mntns != nil {
		_ = r.mntns.Close()
	}
}

func (r *ctRunner) Destroy() {
	r.CloseFiles()
	r.KillGroup()
	r.free()
}

// newRunner starts a container runner for req and waits until its stub is
// connected and ready.
func (c *Backend) newRunner(req warm.Request) (warm.Runner, error) {
	dir, err := os.MkdirTemp(c.warmRoot, "r-")
	if err == nil {
		err = os.Chmod(dir, 0o711)
	}
	if err != nil {
		return nil, err
	}
	name := "codexec-warm-" + strconv.FormatInt(c.seq.Add(1), 10) + "-" + strconv.Itoa(os.Getpid())
	ct := &ctRunner{name: name, dir: dir}
	ct.free = func() {
		if ct.node != nil {
			ct.node.close()
			_ = ct.cliIn.Close()
		}
		if ct.deadline != nil {
			_ = ct.deadline.Close()
		}
		if ct.capture != nil {
			_ = ct.capture.Close()
		}
		_ = c.cliQuiet("rm", "-f", name)
		_ = os.RemoveAll(dir)
	}
	launch := c.launchRunner
	if req.Kind == sandbox.WarmNode {
		launch = c.launchNodeRunner
	}
	ct.deadline, err = makeLifeFIFOs(dir)
	if err == nil {
		err = launch(req, ct)
	}
	if err != nil {
		ct.free()
		return nil, err
	}
	// The sockets exist before any run is given: its program finds them
	// from its first instruction.
	if c.opts.CaptureSpec.Enabled() {
		if ct.capture, err = captureIn(ct.pid, c.opts.CaptureSpec); err != nil {
			ct.Destroy()
			return nil, err
		}
	}
	return ct, nil
}

func (c *Backend) launchRunner(req warm.Request, ct *ctRunner) error {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(ct.dir, ctlName), Net: "unix"})
	if err != nil {
		return err
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Join(ct.dir, ctlName), 0o666); err != nil {
		return err
	}
	spec := req.Base
	spec.Dir = ct.dir
	cmd := warmEntry(containerArgv(append(slices.Clip(spec.Argv), sandbox.WorkspacePath+"/"+ctlName), spec.Dir), "<&5")
	exited, err := c.startRunnerCLI(spec, ct, cmd)
	if err != nil {
		return err
	}
	pid, err := ct.acceptCtl(ln, exited)
	if err == nil {
		err = ct.AwaitReady()
	}
	if err == nil {
		err = ct.inspect(pid)
	}
	if err != nil {
		ct.CloseFiles()
		ct.KillGroup()
		return err
	}
	return nil
}

// startRunnerCLI starts the CLI that runs the runner's container (command
// ctCmd), with the minimum CPU weight; exited is closed when the CLI has
// exited.
func (c *Backend) startRunnerCLI(spec sandbox.Spec, r *ctRunner, ctCmd []string) (chan struct{}, error) {
	cmd := exec.Command(c.cli, c.runArgs(spec, r.name, spec.Dir, sandbox.WorkspacePath, ctCmd, "--cpu-shares", "2")...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r.Cmd = cmd
	var child [3]*os.File
	var err error
	defer func() {
		for _, f := range child {
			if f != nil {
				_ = f.Close()
			}
		}
	}()
	if child[0], r.Stdin, err = os.Pipe(); err == nil {
		if r.Stdout, child[1], err = os.Pipe(); err == nil {
			r.Stderr, child[2], err = os.Pipe()
		}
	}
	if err != nil {
		r.CloseFiles()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = child[0], child[1], child[2]
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		r.CloseFiles()
		return nil, err
	}
	exited := make(chan struct{})
	var werr error
	go func() { werr = wait(); close(exited) }()
	r.Wait = func() error { <-exited; return werr }
	return exited, nil
}

// acceptCtl accepts the stub's connection on ln (giving up when the CLI
// exits or warm.ReadyTimeout passes), keeps it as r.Ctl and returns the
// stub's host pid.
func (r *ctRunner) acceptCtl(ln *net.UnixListener, exited chan struct{}) (int, error) {
	_ = ln.SetDeadline(time.Now().Add(warm.ReadyTimeout))
	accepted := make(chan struct{})
	defer close(accepted)
	go func() {
		select {
		case <-exited:
			_ = ln.Close()
		case <-accepted:
		}
	}()
	conn, err := ln.AcceptUnix()
	if err != nil {
		return 0, fmt.Errorf("container runner did not connect: %w", err)
	}
	defer conn.Close()
	_ = os.Remove(ln.Addr().String())
	return r.adoptCtl(conn)
}

// adoptCtl makes a pollable duplicate of conn the runner's ctl and returns
// the peer's pid (SO_PEERCRED: in the server's pid namespace).
func (r *ctRunner) adoptCtl(conn *net.UnixConn) (int, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var fd, pid int
	var ferr error
	err = rc.Control(func(s uintptr) {
		var cred *unix.Ucred
		if cred, ferr = unix.GetsockoptUcred(int(s), unix.SOL_SOCKET, unix.SO_PEERCRED); ferr != nil {
			return
		}
		pid = int(cred.Pid)
		fd, ferr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err = errors.Join(err, ferr); err != nil {
		return 0, err
	}
	_ = unix.SetNonblock(fd, true)
	r.Ctl = os.NewFile(uintptr(fd), "runner-ctl")
	return pid, nil
}

// inspect records, from /proc, what a take needs of the stub's process:
// its mount namespace, cgroup and environment, and what it holds.
func (r *ctRunner) inspect(pid int) error {
	r.pid = pid
	procDir := "/proc/" + strconv.Itoa(pid)
	host, err := warm.HostMountNS()
	if err != nil {
		return err
	}
	if ns, err := os.Readlink(procDir + "/ns/mnt"); err != nil || ns == host {
		return fmt.Errorf("container runner %d: not in a mount namespace of its own (%v)", pid, err)
	}
	if r.mntns, err = os.Open(procDir + "/ns/mnt"); err != nil {
		return err
	}
	cg, err := os.ReadFile(procDir + "/cgroup")
	if err != nil {
		return err
	}
	var mem string
	if r.cpu, mem = cgroupFiles(string(cg)); r.cpu.file == "" {
		return fmt.Errorf("container runner %d: no cpu cgroup found", pid)
	}
	env, err := os.ReadFile(procDir + "/environ")
	if err != nil {
		return err
	}
	r.env = strings.Split(strings.TrimSuffix(string(env), "\x00"), "\x00")
	if b, err := os.ReadFile(mem); err == nil {
		r.Mem, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	// The attached CLI is part of what a ready container costs (tens of
	// MiB with podman), so the pool's memory cap counts it.
	r.Mem += proc.ResidentBytes(r.Cmd.Process.Pid)
	return nil
}

// cpuWeight is a cgroup file holding a CPU share and the default value a
// cold container has there.
type cpuWeight struct{ file, normal string }

// cgroupFiles finds, from a process's /proc/<pid>/cgroup, its CPU share
// file and memory usage file, under cgroup v1 controllers where they are
// mounted (hybrid hosts) or else cgroup v2.
func cgroupFiles(procCgroup string) (cpu cpuWeight, mem string) {
	v2 := "/sys/fs/cgroup"
	if _, err := os.Stat(v2 + "/cgroup.controllers"); err != nil {
		v2 += "/unified"
	}
	for _, line := range strings.Split(strings.TrimSpace(procCgroup), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		ctrls := strings.Split(f[1], ",")
		switch {
		case slices.Contains(ctrls, "cpu"):
			cpu = cpuWeight{filepath.Join("/sys/fs/cgroup", f[1], f[2], "cpu.shares"), "1024"}
		case slices.Contains(ctrls, "memory"):
			mem = filepath.Join("/sys/fs/cgroup", f[1], f[2], "memory.usage_in_bytes")
		case f[0] == "0" && f[1] == "":
			if cpu.file == "" {
				cpu = cpuWeight{filepath.Join(v2, f[2], "cpu.weight"), "100"}
			}
			if mem == "" {
				mem = filepath.Join(v2, f[2], "memory.current")
			}
		}
	}
	return cpu, mem
}

// startWarm runs spec in the taken container runner r (see above). On
// error the runner is destroyed in the background and the caller starts
// cold.
func (c *Backend) startWarm(spec sandbox.Spec, req warm.Request, r *ctRunner) (*proc.HostProc, error) {
	err := c.grantWorkspace(spec)
	if err == nil {
		err = bindContainerWorkspace(r, spec.Dir, sandbox.WorkspaceReadOnly(spec, c.opts.OwnedRoot),
			sandbox.MasksBelow(c.opts.Mask, spec.Dir, sandbox.WorkspacePath, c.opts.UID))
	}
	if err == nil {
		err = os.WriteFile(r.cpu.file, []byte(r.cpu.normal), 0)
	}
	if err == nil {
		err = armDeadline(r.deadline, spec.Deadline)
		r.deadline = nil
	}
	var stdout, stderr *os.File
	msg := r.Ctl
	switch {
	case err != nil:
	case r.node != nil:
		stdout, stderr, msg = r.node.out, r.node.err, r.node.msg
	default:
		drainCLIOutput(r)
		stdout, stderr, err = r.HandOverStdio()
	}
	if err != nil {
		c.runners.DestroyLater(r)
		return nil, err
	}
	capture.Hand(spec.Egress, r.capture)
	r.capture = nil
	name := r.name
	var killed atomic.Bool
	hooks := c.hooks(name, spec, &killed)
	free := r.free
	hooks.Cleanup = func() error { free(); return nil }
	e, hooks := warm.NewEarly(&r.Stub, hooks, &c.runners.Cleanups, func() { _ = c.cliQuiet("kill", "--signal", "9", name) })
	cliExit := hooks.AfterWait
	hooks.AfterWait = func(x *sandbox.Exit) {
		if !e.Reported() { // the stub's own status needs no decoding
			cliExit(x)
		}
	}
	p := proc.Adopt(r.Cmd, r.Wait, r.Stdin, stdout, stderr, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	e.Attach(p)
	_ = r.mntns.Close()
	_, err = msg.Write(helper.EncodeRun(sandbox.WorkspacePath, r.env, req.Code, containerArgs(req.Args, spec.Dir)))
	if msg != r.Ctl {
		_ = msg.Close()
	}
	slog.Debug("warm run", "id", spec.ID, "kind", req.Kind, "container", name)
	if err != nil {
		return nil, warm.FailedHandOver(p, "warm container", err)
	}
	return p, nil
}

// drainCLIOutput discards what the CLI itself still writes once the run's
// output pipes are handed over (closing them could end the CLI early).
func drainCLIOutput(r *ctRunner) {
	for _, f := range []*os.File{r.Stdout, r.Stderr} {
		go func() { _, _ = io.Copy(io.Discard, f); _ = f.Close() }()
	}
	r.Stdout, r.Stderr = nil, nil
}

// bindContainerWorkspace mounts a clone of the host directory dir over
// /workspace in r's container (nosuid, nodev, read-only if ro) and applies
// masks below it.
func bindContainerWorkspace(r *ctRunner, dir string, ro bool, masks []sandbox.Mask) error {
	tree, err := warm.CloneTree(dir, ro)
	if err != nil {
		return err
	}
	defer unix.Close(tree)
	return warm.InMountNS(r.mntns, func() error {
		if err := unix.MoveMount(tree, "", unix.AT_FDCWD, sandbox.WorkspacePath, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return err
		}
		for _, m := range masks {
			if err := warm.ApplyMask(m); err != nil {
				return err
			}
		}
		return nil
	})
}
