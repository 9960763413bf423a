//go:build linux

package namespace

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/capture"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/staging"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Python fork-servers ("zygotes"). A warm runner saves a run the wait for
// python's start-up but not its CPU (~20–30 ms here), so it cannot raise
// throughput. A zygote is one python that has finished starting, inside a
// sandbox built like a runner's but without --disable-userns, seccomp or
// Landlock of its own (it runs only zygote_python.py). For each pooled
// runner the server opens a fresh run cgroup and sends the zygote the run's
// stdio, control socket and cgroup.procs descriptors; the zygote clones:
//
//	server ──"F"+fds──▶ zygote ──clone(new user/mnt/pid/ipc/uts/net ns)──▶ program (pid 1)
//	                      │  waits on the child's pidfd,          joins the run cgroup,
//	                      │  reports its wait status on the       private /tmp, /dev/shm and
//	                      │  run's control socket                 workspace root tmpfs (the
//	                      │                                       server's mounts below /tmp
//	                      │                                       moved onto it), lo up (and
//	                      │                                       the captured sockets, sent
//	                      ▼                                       with its "R"), fresh /proc,
//	                                                              says "R", waits for the run;
//	                   next "F"                                   then Landlock (own domain),
//	                                                              no caps, no_new_privs,
//	                                                              seccomp, no fds > 2,
//	                                                              zygote modules dropped,
//	                                                              exec(code)
//
// so a run gets the isolation of a cold run — its own namespaces, /tmp,
// cgroup, seccomp filter, Landlock domain, uid 65534 without capabilities —
// and pays a fork instead of an interpreter start. What children share with
// the zygote: its read-only view of /usr and /etc, its (Landlock-protected)
// root and /dev file systems, its hash seed and address-space layout (see
// SECURITY.md; docs/fidelity.md says why the hash seed cannot be per run).
// The cgroup.procs descriptors are opened by the server: since Linux 5.16 a
// write is checked against the opener's credentials.
//
// The server binds the workspace into the program's mount namespace as for a
// warm runner (bind.go); only workspaces it can place in the child's
// private file systems qualify: below /tmp, or directly in OwnedRoot (where
// one-shot workspaces live). Other runs use the other paths.

var (
	//go:embed zygote_python.py
	zygotePython string
	// zygoteDefs defines the fork-server's functions; zygoteBoot, its -c
	// program, takes them from its last argument. They are not the program
	// itself because python keeps a program's syntax tree (~1 MB here) until
	// the program returns, as a child does after its run: freeing it wrote to,
	// and so copied, ~115 pages in every child.
	zygoteDefs = warm.PythonRun + "\n" + zygotePython
	zygoteBoot = `exec(__import__("sys").argv.pop()); __codexec_run(*__codexec_zygote(), "__codexec_zygote")`
)

// zygote is one python fork-server. Fork requests are serialised by mu.
type zygote struct {
	wait func() error
	// proc is the zygote's sandbox-init (bwrap once started): without a
	// cgroup, killing it ends the zygote's pid namespace.
	proc *os.Process
	ctl  *os.File
	cg   *cgroup.Group
	st   *staging.Stage
	mu   sync.Mutex
	dead bool
	// socks are what each child makes in its network namespace and sends
	// with its "R" (nil: loopback only; capture.go).
	socks *helper.Sockets
}

// zygoteReady bounds a zygote's start-up.
const zygoteReady = 20 * time.Second

// forkEnabled reports whether runs can be forked from zygotes: the setting,
// and Landlock with scoping, which keeps children from writing the file
// systems they share.
func (n *Backend) forkEnabled() bool {
	return n.opts.Pool.Fork && !n.opts.NoLandlock && helper.LandlockABI() >= 6
}

// zygoteRoot is the directory each child covers with a private tmpfs to hold
// its workspace's mount point ("" when OwnedRoot lies below /tmp, which is
// private already, or is unset).
func (n *Backend) zygoteRoot() string {
	r := n.opts.OwnedRoot
	if r == "" || r == "/tmp" || strings.HasPrefix(r, "/tmp/") || !filepath.IsAbs(r) || filepath.Dir(r) == "/" {
		return ""
	}
	return r
}

// forkRequest turns a python warm request into its forked kind when spec's
// workspace can be placed in a zygote child.
func (n *Backend) forkRequest(spec sandbox.Spec, req warm.Request) (warm.Request, bool) {
	if req.Kind != sandbox.WarmPython || !n.forkEnabled() {
		return req, false
	}
	if spec.Dir != "" {
		inTmp := strings.HasPrefix(spec.Dir, "/tmp/") && filepath.Clean(spec.Dir) == spec.Dir
		root := n.zygoteRoot()
		if !inTmp && (root == "" || filepath.Dir(spec.Dir) != root) {
			return req, false
		}
	}
	req.Fork, req.Key = true, "fork "+req.Key
	return req, true
}

// zygoteFor returns the running zygote for req's kind, starting one if
// needed.
func (n *Backend) zygoteFor(req warm.Request) (*zygote, error) {
	n.zygMu.Lock()
	defer n.zygMu.Unlock()
	if z := n.zygotes[req.Key]; z != nil && !z.isDead() {
		return z, nil
	} else if z != nil {
		delete(n.zygotes, req.Key)
		n.live.Delete(req.Key)
		go z.stop()
	}
	if n.zygotes == nil {
		n.zygotes = map[string]*zygote{}
	}
	t0 := time.Now()
	z, err := n.startZygote(req)
	if err != nil {
		return nil, err
	}
	slog.Info("python fork-server started", "ms", time.Since(t0).Milliseconds())
	n.zygotes[req.Key] = z
	n.live.Store(req.Key, z)
	return z, nil
}

// zygoteUp reports whether the zygote for key (a fork request's) is
// running, without waiting for one that is starting.
func (n *Backend) zygoteUp(key string) bool {
	z, ok := n.live.Load(key)
	return ok && !z.(*zygote).isDead()
}

func (z *zygote) isDead() bool {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.dead
}

// startZygote starts a fork-server for req in its own cgroup and sandbox
// and waits until it is ready.
func (n *Backend) startZygote(req warm.Request) (z *zygote, retErr error) {
	name := "zygote-" + strconv.FormatInt(runSeq.Add(1), 10)
	spec := req.Base
	z = &zygote{}
	if n.capturing() {
		socks := n.sockets()
		z.socks = &socks
	}
	var err error
	if z.cg, err = n.newGroup(name, sandbox.Limits{MemoryBytes: spec.Limits.MemoryBytes}); err != nil {
		return nil, err
	}
	if z.st, err = staging.New(name, n.tmpl != nil); err != nil {
		_ = z.cg.Destroy()
		return nil, err
	}
	defer func() {
		if retErr != nil {
			z.stop()
		}
	}()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	_ = unix.SetNonblock(fds[0], true)
	z.ctl = os.NewFile(uintptr(fds[0]), "zygote-ctl")
	child := os.NewFile(uintptr(fds[1]), "zygote-ctl-child")
	b := &bwrapArgs{n: n, stage: z.st, zygote: true, zygoteRoot: n.zygoteRoot(), files: []*os.File{child}}
	defer b.CloseFiles()
	if err := b.build(spec); err != nil {
		return nil, err
	}
	argv := append(append([]string{n.opts.Bwrap}, b.args...), zygoteArgv(spec, b, n, z.socks)...)
	cmd := n.coldCmd(spec, z.cg, argv, b.files, b.plan)
	cmd.Stderr = os.Stderr
	wait, err := proc.StartTracked(cmd)
	if err != nil {
		return nil, err
	}
	z.wait, z.proc = wait, cmd.Process
	b.CloseFiles()
	return z, z.AwaitReady()
}

// zygoteArgv is the interpreter command line: the runner's flags, the
// zygote's -c program and its arguments (seccomp descriptor, /tmp size,
// workspace root, capset's syscall number, ids, clone's syscall number,
// /dev/shm size, the sockets each child makes (helper.Sockets.String; ""
// for none), each child's resource limits (childRlimits), the stub's
// definitions).
func zygoteArgv(spec sandbox.Spec, b *bwrapArgs, n *Backend, socks *helper.Sockets) []string {
	argv := append([]string{}, spec.Argv[:len(spec.Argv)-1]...) // drop the runner stub
	disk := spec.Limits.DiskBytes
	if disk <= 0 {
		disk = 256 << 20
	}
	return append(argv, zygoteBoot, b.seccompFd, strconv.FormatInt(disk, 10), b.zygoteRoot,
		strconv.Itoa(unix.SYS_CAPSET), strconv.Itoa(n.opts.UID), strconv.Itoa(n.opts.GID),
		strconv.Itoa(unix.SYS_CLONE), strconv.FormatInt(shmSize(spec), 10), childSockets(socks), n.childRlimits(spec), zygoteDefs)
}

// childSockets is a zygote child's sockets argument: "" for loopback only.
func childSockets(socks *helper.Sockets) string {
	if socks == nil || len(socks.List()) == 0 {
		return ""
	}
	return socks.String()
}

func (z *zygote) AwaitReady() error {
	_ = z.ctl.SetReadDeadline(time.Now().Add(zygoteReady))
	b := make([]byte, 1)
	n, err := z.ctl.Read(b)
	_ = z.ctl.SetReadDeadline(time.Time{})
	if err != nil || n != 1 || b[0] != 'Z' {
		return fmt.Errorf("python fork-server did not get ready: %v", err)
	}
	return nil
}

// fork asks the zygote for one child with the given descriptors attached.
func (z *zygote) fork(files []*os.File) error {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.dead {
		return errors.New("python fork-server is gone")
	}
	fds := make([]int, len(files))
	for i, f := range files {
		fds[i] = int(f.Fd())
	}
	rc, err := z.ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	werr := rc.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), []byte("F"), unix.UnixRights(fds...), nil, 0)
		return serr != unix.EAGAIN
	})
	if err := errors.Join(werr, serr); err != nil {
		z.dead = true
		return fmt.Errorf("python fork-server: %w", err)
	}
	return nil
}

// stop ends the zygote (its children are in their own cgroups) and frees
// what it holds.
func (z *zygote) stop() {
	z.mu.Lock()
	z.dead = true
	z.mu.Unlock()
	if z.ctl != nil {
		_ = z.ctl.Close()
	}
	_ = z.cg.Kill()
	if z.cg == nil && z.proc != nil {
		_ = z.proc.Kill()
	}
	if z.wait != nil {
		_ = z.wait()
	}
	_ = z.cg.Destroy()
	_ = z.st.Release()
}

// closeZygotes stops every zygote (Namespace.Close).
func (n *Backend) closeZygotes() {
	n.zygMu.Lock()
	all := n.zygotes
	n.zygotes = nil
	n.live.Clear()
	n.zygMu.Unlock()
	for _, z := range all {
		z.stop()
	}
}

// forkRunner makes one pooled runner by forking it from req's zygote: a
// run cgroup (new, or an emptied one reset: cgroup.Pool), stdio pipes and
// control socket, then the child's "R".
func (n *Backend) forkRunner(req warm.Request) (*nsRunner, error) {
	z, err := n.zygoteFor(req)
	if err != nil {
		return nil, err
	}
	name := "fork-" + strconv.FormatInt(runSeq.Add(1), 10)
	l := req.Base.Limits
	var cg *cgroup.Group
	if !n.noCgroup {
		if cg, err = n.groups.New(name, cgroup.Limits{MemoryBytes: l.MemoryBytes, CPUs: l.CPUs, Pids: l.Pids}); err != nil {
			return nil, err
		}
	}
	r, err := forkInto(z, cg)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	return r, nil
}

func forkInto(z *zygote, cg *cgroup.Group) (*nsRunner, error) {
	rp, err := warm.NewPipes()
	if err != nil {
		return nil, err
	}
	files := rp.Child[:]
	for _, p := range cg.ProcsFiles() {
		// Opened without Go's poller (os.OpenFile would register each
		// cgroupfs file with it): the descriptors are only handed over.
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			closeAll(files[4:])
			rp.Close()
			return nil, &os.PathError{Op: "open", Path: p, Err: err}
		}
		files = append(files, os.NewFile(uintptr(fd), p))
	}
	if cg == nil {
		// No cgroup to find the child in: it is the sender of its "R",
		// which the kernel names (SO_PASSCRED), as a host pid.
		err = passCredentials(rp.R.Ctl)
	}
	if err == nil {
		err = z.fork(files)
	}
	closeAll(files[4:])
	rp.CloseChild()
	r := &nsRunner{Stub: rp.R, cg: cg, forked: true}
	r.Wait = r.forkedWait
	pid := 0
	if err == nil {
		pid, err = r.awaitForked(z.socks)
	}
	if err == nil {
		r.mntns, r.lead, err = openForked(cg, pid)
	}
	if err != nil {
		r.CloseFiles()
		_ = cg.Kill()
		killPid(cg, pid)
		return nil, err
	}
	r.Mem = cg.MemoryCurrent()
	return r, nil
}

// awaitForked waits for a forked child's "R" (with its sockets, if the
// zygote makes some) and returns the child's host pid if the control
// socket passes credentials (0 if not).
func (r *nsRunner) awaitForked(socks *helper.Sockets) (int, error) {
	want := helper.Sockets{}
	if socks != nil {
		want = *socks
	}
	files, pid, err := helper.ReceiveSocketsFrom(r.Ctl, helper.ReadyTag, len(want.List()), captureConnTimeout)
	if err != nil || socks == nil {
		return pid, err
	}
	r.capture, err = capture.Wrap(want, files)
	return pid, err
}

// openForked opens a forked child's mount namespace and its program: the
// only process in its run cgroup, or without one the pid its "R" came
// from; pid 1 of its own pid namespace either way.
func openForked(cg *cgroup.Group, pid int) (*os.File, *proc.NamespaceInit, error) {
	if cg != nil {
		pids := cg.Pids()
		if len(pids) != 1 {
			return nil, nil, fmt.Errorf("forked runner: want one process in its cgroup, found %d", len(pids))
		}
		pid = pids[0]
	}
	if pid <= 0 {
		return nil, nil, errors.New("forked runner: the child's pid is unknown")
	}
	mntns, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/mnt")
	if err != nil {
		return nil, nil, err
	}
	lead, err := proc.OpenNamespaceInit(pid)
	if err != nil {
		_ = mntns.Close()
		return nil, nil, err
	}
	return mntns, lead, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		_ = f.Close()
	}
}

// forkedWait waits for the zygote's report of the program's wait status.
// A report that never comes (the zygote is gone) reads as killed.
func (r *nsRunner) forkedWait() error {
	var b [4]byte
	_, err := io.ReadFull(r.Ctl, b[:])
	_ = r.Ctl.Close()
	defer r.lead.Close()
	if err != nil {
		r.exit = sandbox.Exit{Code: -1, Signal: int(syscall.SIGKILL)}
		return nil
	}
	ws := syscall.WaitStatus(binary.NativeEndian.Uint32(b[:]))
	if ws.Signaled() {
		r.exit = sandbox.Exit{Code: -1, Signal: int(r.lead.ExitSignal(ws.Signal()))}
	} else {
		r.exit = sandbox.Exit{Code: ws.ExitStatus()}
	}
	return nil
}
