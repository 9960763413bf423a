//go:build linux

package namespace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/capture"
	"github.com/codexec/codexec/internal/sandbox/helper"
	"github.com/codexec/codexec/internal/sandbox/idmap"
	"github.com/codexec/codexec/internal/sandbox/mounttemplate"
	"github.com/codexec/codexec/internal/sandbox/seccomp"
	"github.com/codexec/codexec/internal/sandbox/staging"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Backend runs every program in fresh user, pid, network, ipc, uts, mount
// and cgroup namespaces built by bubblewrap, as an unprivileged host uid with
// no capabilities, no_new_privs and a seccomp filter, inside its own cgroup
// (memory, CPU and pids limits, group kill, OOM detection). The file system
// is a tmpfs root with read-only /usr (and the /bin, /lib… links), a few /etc
// files, fresh /proc and /dev, a size-limited /tmp and the workspace (the
// only writable host directory) at its host path. Only loopback networking:
// with a CaptureSpec, the network namespace is the server's (the program
// cannot change it) and its captured sockets are served outside by the
// run's egress owner (capture.go).
type Backend struct {
	opts    Options
	cg      cgroup.Info
	seccomp []byte
	// groups keeps forked runs' emptied cgroups for the next ones.
	groups *cgroup.Pool
	// launchers are pooled sandbox-init processes (launcher.go).
	launchers *launcherPool
	// runners keeps warm runners; its Cleanups also track background
	// removal of finished runs' cgroups.
	runners warm.Host
	// zygotes are the python fork-servers by warm key (zygote.go); zygMu
	// is held while one starts. live mirrors the started ones, for a
	// look-up that must not wait for a start.
	zygMu   sync.Mutex
	zygotes map[string]*zygote
	live    sync.Map // warm key → *zygote
	// tmpl is the template mount namespace bwrap starts from
	// (template.go); nil: the host's.
	tmpl *mounttemplate.Template
	// ids makes the idmapped mounts of caller directories run with their
	// owner's rights (Spec.DirOwner; owner.go).
	ids *idmap.Mapper
	// files are the CaptureSpec's files as bound in every sandbox, and
	// placeholders the template's points for them (capture.go).
	files        []captureFile
	placeholders []string
	// hostUID and hostGID are who programs are on the host: opts.UID and
	// GID as root; the server's own user without root (opts.Rootless),
	// mapped to opts.UID inside each sandbox's user namespace.
	hostUID, hostGID int
	// noCgroup: no cgroup can be made (without root and without a
	// delegated one). Runs then get nil groups, per-process resource
	// limits (the Landlock step's RlimitsOption, or the zygote child's)
	// and die with their pid namespace's init; a forked child is known by
	// the pid its "R" came from (rootless.go).
	noCgroup bool
}

// keptGroups bounds the emptied cgroups kept for reuse: about as many as
// runs in flight with the runners forked ahead of them.
const keptGroups = 16

// runSeq numbers runs process-wide, so cgroup and staging names never
// collide between backends.
var runSeq atomic.Int64

var leftoverSweep sync.Once

// NewNamespace checks that the namespace backend can work here (bwrap,
// user namespaces, cgroups, seccomp) and returns it; the error says what is
// missing. It runs one trivial sandbox as a probe (a few milliseconds).
func New(ctx context.Context, o Options) (*Backend, error) {
	n, err := newBackend(o)
	if err != nil {
		return nil, err
	}
	for _, spec := range o.Prewarm {
		n.Prewarm(spec)
	}
	if err := n.probe(ctx); err != nil {
		_ = n.Close()
		return nil, err
	}
	return n, nil
}

func newBackend(o Options) (*Backend, error) {
	var err error
	if o.Bwrap, err = findBwrap(o.Bwrap); err != nil {
		return nil, err
	}
	if o.Exe == "" {
		if o.Exe, err = helper.Exe(); err != nil {
			return nil, fmt.Errorf("cannot locate the codexec binary for sandbox-init: %w", err)
		}
	}
	if o.UID == 0 {
		o.UID = 65534
	}
	if o.GID == 0 {
		o.GID = 65534
	}
	if os.Geteuid() != 0 && !o.Rootless {
		return nil, errors.New("the namespace sandbox needs codexec to run as root, or without root in a user namespace of its own (codexec does that itself when started by a normal user where user namespaces are allowed)")
	}
	if err := userNamespacesEnabled(); err != nil {
		return nil, err
	}
	if err := capture.Check(o.CaptureSpec); err != nil {
		return nil, err
	}
	files, placeholders, err := captureFiles(o.CaptureSpec)
	if err != nil {
		return nil, err
	}
	proc.SweepDeadRunsOnce()
	n := &Backend{opts: o, cg: cgroup.DetectIn(o.CgroupParent), ids: idmap.New(o.Exe, o.UID, o.GID), files: files, placeholders: placeholders,
		hostUID: o.UID, hostGID: o.GID}
	if o.Rootless {
		// DetectIn proved a delegated cgroup writable, or says why not.
		n.hostUID, n.hostGID = os.Getuid(), os.Getgid()
		n.noCgroup = !n.cg.Usable()
		if n.noCgroup {
			slog.Info("no cgroup this user may use: runs are limited per process", "reason", n.cg.String())
		}
	}
	n.groups = cgroup.NewPool(n.cg, keptGroups)
	n.launchers = &launcherPool{n: n}
	n.runners.Pool = warm.NewPool(o.Pool, n.startRunner)
	leftoverSweep.Do(func() {
		if n.noCgroup {
			staging.Sweep()
			return
		}
		if k := cgroup.Sweep(n.cg); k.Removed > 0 || k.Spared > 0 {
			slog.Info("removed cgroups left by codexec servers that are gone", "count", k.Removed,
				"spared_with_processes", k.Spared)
		}
		staging.Sweep()
	})
	if !n.cg.Usable() && !n.noCgroup {
		return nil, fmt.Errorf("resource limits unavailable: %s", n.cg)
	}
	// Every sandbox joins a group beneath these before it runs anything: if
	// the server dies, its watchdog kills what a parent-death signal missed.
	for _, dir := range cgroup.OwnDirs(n.cg) {
		if !n.noCgroup {
			proc.GuardCgroup(dir)
		}
	}
	if n.seccomp, err = seccomp.Program(); err != nil {
		return nil, err
	}
	if err := staging.Acquire(); err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
	}
	root, err := staging.Root()
	if err == nil {
		n.tmpl, err = openTemplate(n.opts, root, n.placeholders)
	}
	if err != nil {
		slog.Info("sandboxes start from the host mount namespace", "reason", err)
	}
	return n, nil
}

func findBwrap(p string) (string, error) {
	if p != "" {
		return p, nil
	}
	if _, err := os.Stat("/usr/bin/bwrap"); err == nil {
		return "/usr/bin/bwrap", nil
	}
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", errors.New("bubblewrap (bwrap) is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
	}
	return p, nil
}

// userNamespacesEnabled reads the sysctls that disable unprivileged user
// namespaces on various distributions.
func userNamespacesEnabled() error {
	for file, bad := range map[string]string{
		"/proc/sys/user/max_user_namespaces":                     "0",
		"/proc/sys/kernel/unprivileged_userns_clone":             "0",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1",
	} {
		if b, err := os.ReadFile(file); err == nil && string(trimNL(b)) == bad {
			return fmt.Errorf("unprivileged user namespaces are disabled (%s = %s)", file, bad)
		}
	}
	return nil
}

func trimNL(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// CgroupInfo describes the cgroup setup the backend uses: Version 0 when
// it has none (without root and without a delegated cgroup).
func (n *Backend) CgroupInfo() cgroup.Info {
	if n.noCgroup {
		return cgroup.Info{}
	}
	return n.cg
}

// Name returns "namespace".
func (*Backend) Name() string { return "namespace" }

// Isolated returns true.
func (*Backend) Isolated() bool { return true }

// User is the unprivileged host user programs run as.
func (n *Backend) User() confine.Identity { return confine.As(n.hostUID, n.hostGID) }

// Start starts spec in a fresh sandbox. spec.Network is refused; with a
// CaptureSpec, spec.Egress serves the sandbox's sockets (capture.go). A warm
// runner is used when spec.Warm asks for one and one is ready; else a pooled
// launcher (already in its cgroup) when one is ready for spec.Limits;
// otherwise a cgroup and a launcher are made on the spot.
func (n *Backend) Start(_ context.Context, spec sandbox.Spec) (sandbox.Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	if spec.Network {
		return nil, errors.New("sandbox: the namespace backend has no network access to grant")
	}
	if req, ok := n.warmRequest(spec); ok {
		return n.startCounted(spec, req)
	}
	return warm.AsProcess(pathed(proc.PathCold)(n.startCold(spec)))
}

// warmRequest returns the warm request serving spec, if a runner can:
// forked from a zygote where the pool forks python runners; exec runners
// (bash) only where the Landlock step, their stub, is in the sandbox.
func (n *Backend) warmRequest(spec sandbox.Spec) (warm.Request, bool) {
	req, ok := warm.Parse(spec)
	if !ok || (req.Exec && n.opts.NoLandlock) {
		return warm.Request{}, false
	}
	if freq, ok := n.forkRequest(spec, req); ok {
		req = freq
	}
	return req, true
}

// startCounted starts a run that a warm runner can serve (warm if one is
// ready), counted in flight until released so refills wait for its end.
func (n *Backend) startCounted(spec sandbox.Spec, req warm.Request) (sandbox.Process, error) {
	return n.runners.Pool.Serve(req, func(r warm.Runner) (*proc.HostProc, error) {
		return pathed(proc.PathWarm)(n.startWarm(spec, req, r.(*nsRunner)))
	},
		func() (*proc.HostProc, error) { return n.startMissed(spec, req) })
}

// startMissed starts a run that found no warm runner ready. A python run
// that a running zygote can serve is forked on the spot: a fork and fresh
// namespaces cost a fraction of a new sandbox and interpreter, so under
// load (every run a miss) forking is what keeps the CPU per run low. Before
// its zygote is up (a new server's first run), the run starts cold rather
// than wait for it; the pool's refill starts the zygote.
func (n *Backend) startMissed(spec sandbox.Spec, req warm.Request) (*proc.HostProc, error) {
	if req.Fork && n.zygoteUp(req.Key) {
		r, err := n.forkRunner(req)
		if err == nil {
			return pathed(proc.PathForked)(n.startWarm(spec, req, r))
		}
		slog.Debug("fork for a missed run failed; starting cold", "err", err)
	}
	return pathed(proc.PathCold)(n.startCold(spec))
}

// startCold starts spec without a warm runner.
func (n *Backend) startCold(spec sandbox.Spec) (*proc.HostProc, error) {
	name := spec.ID + "-" + strconv.FormatInt(runSeq.Add(1), 10)
	if w := n.launchers.take(spec.Limits); w != nil {
		p, err := n.start(spec, name, w.cg, w)
		if err == nil {
			return p, nil
		}
		discardLaunchers([]*launcher{w})
		slog.Debug("pooled sandbox launcher failed; starting a fresh one", "err", err)
	}
	return n.startFresh(spec, name)
}

// startFresh starts spec with a new cgroup and launcher (no pool).
func (n *Backend) startFresh(spec sandbox.Spec, name string) (*proc.HostProc, error) {
	cg, err := n.newGroup(name, spec.Limits)
	if err != nil {
		return nil, err
	}
	p, err := n.start(spec, name, cg, nil)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	return p, nil
}

// Close stops the pooled launchers and removes their cgroups. The backend
// must not be used afterwards.
func (n *Backend) Close() error {
	n.runners.Pool.Close()
	n.closeZygotes()
	n.launchers.close()
	n.runners.Cleanups.Wait()
	n.groups.Close()
	if n.tmpl != nil {
		n.tmpl.Close()
	}
	staging.Release()
	cgroup.Release()
	n.ids.Close()
	return nil
}

func (n *Backend) start(spec sandbox.Spec, name string, cg *cgroup.Group, w *launcher) (*proc.HostProc, error) {
	if spec.Background {
		_ = cg.SetCPUWeight(2)
	}
	if err := sandbox.HandOverWorkspace(spec, n.opts.OwnedRoot, n.hostUID, n.hostGID); err != nil {
		return nil, err
	}
	st, err := staging.New(name, n.tmpl != nil)
	if err != nil {
		return nil, err
	}
	socks, captured := n.runSockets(spec)
	b := &bwrapArgs{n: n, stage: st, refs: w != nil, ownNet: captured || (w != nil && w.ownNet)}
	defer b.CloseFiles()
	if err := b.build(spec); err != nil {
		_ = st.Release()
		return nil, err
	}
	var p *proc.HostProc
	var c *sandbox.Capture
	hooks := n.runHooks(cg, st, &p)
	bwrapArgv := append(append([]string{n.opts.Bwrap}, b.args...), spec.Argv...)
	if w != nil {
		p, err = proc.Launch(w.cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks, func(stdio [3]*os.File) (func() error, error) {
			var err error
			c, err = w.launch(bwrapArgv, spec.Env, b.plan, socks, captured, stdio, b.files)
			return w.wait, err
		})
	} else {
		cmd := n.coldCmd(spec, cg, bwrapArgv, b.files, b.plan)
		p, err = proc.Launch(cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks, func(stdio [3]*os.File) (func() error, error) {
			cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio[0], stdio[1], stdio[2]
			if !captured {
				return proc.StartTracked(cmd)
			}
			wait, cc, err := startCaptured(cmd, socks)
			c = cc
			return wait, err
		})
	}
	if err != nil {
		_ = st.Release()
		return nil, fmt.Errorf("sandbox: start bwrap: %w", err)
	}
	capture.Hand(spec.Egress, c)
	return p, nil
}

// runHooks are the sandbox.Process hooks of a run in cg whose staging mounts are st;
// *pp is the run's proc.HostProc once started.
func (n *Backend) runHooks(cg *cgroup.Group, st *staging.Stage, pp **proc.HostProc) proc.Hooks {
	return proc.Hooks{
		Signal: func(sig syscall.Signal) error {
			if sig == syscall.SIGKILL {
				// The child first, so it cannot join the cgroup after the
				// cgroup kill found it empty; what it forked is in the group.
				if *pp != nil {
					(*pp).KillLeader()
				}
				return cg.Kill()
			}
			// Not to bwrap itself: it would die and take the program with it
			// before the program could handle the signal.
			signalRun(cg, (*pp).Pid(), sig)
			return nil
		},
		AfterWait: func(e *sandbox.Exit) { namespaceExit(e, cg) },
		Read:      func(resetPeak bool) proc.Reading { return readGroup(cg, resetPeak) },
		// Once the group is empty nothing of the run is left; removing the
		// group and staging mounts is slow-ish (cgroup locks), so it happens
		// off the caller's path. Close waits for it.
		Cleanup: func() error {
			cg.Drain()
			n.runners.Cleanups.Add(1)
			go func() {
				defer n.runners.Cleanups.Done()
				if err := errors.Join(cg.Destroy(), st.Release()); err != nil {
					slog.Warn("sandbox cleanup", "err", err)
				}
				n.launchers.refill()
			}()
			return nil
		},
	}
}

// startWarm runs spec in the taken runner r: workspace granted and bound,
// CPU weight restored, output attached, then the run handed over. On error
// the runner is destroyed in the background and the caller starts cold.
func (n *Backend) startWarm(spec sandbox.Spec, req warm.Request, r *nsRunner) (*proc.HostProc, error) {
	err := sandbox.HandOverWorkspace(spec, n.opts.OwnedRoot, n.hostUID, n.hostGID)
	if err == nil {
		err = n.bindWorkspace(r, spec, sandbox.WorkspaceReadOnly(spec, n.opts.OwnedRoot))
	}
	if err == nil {
		err = r.cg.SetCPUWeight(1024)
	}
	if err != nil {
		n.runners.DestroyLater(r)
		return nil, err
	}
	var p *proc.HostProc
	hooks := n.runHooks(r.cg, r.st, &p)
	if r.lead != nil {
		if r.cg == nil {
			hooks.Signal = forkedSignal(r.lead, hooks.Signal)
		}
		hooks.Signal = r.lead.Wrap(hooks.Signal)
	}
	// Python runners report their status themselves, and exec runners
	// (bash) end with bwrap: both take fresh output pipes, and their
	// teardown goes to the background (early.go).
	early := !r.forked && req.Kind == sandbox.WarmPython
	stdout, stderr := r.Stdout, r.Stderr
	var e *warm.Early
	if early || req.Exec {
		if stdout, stderr, err = r.HandOverStdio(); err != nil {
			n.runners.DestroyLater(r)
			return nil, err
		}
		e, hooks = warm.NewEarly(&r.Stub, hooks, &n.runners.Cleanups, r.kill)
	}
	p = proc.Adopt(r.Cmd, r.Wait, r.Stdin, stdout, stderr, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	switch {
	case r.forked:
		p.SetExit(func() sandbox.Exit { return r.exit })
	case early:
		e.Attach(p)
	case req.Exec:
		e.AttachExec(p)
	}
	_ = r.mntns.Close()
	capture.Hand(spec.Egress, r.takeCapture())
	_, err = r.Ctl.Write(helper.EncodeRun(spec.Dir, spec.Env, req.Code, req.Args))
	if !r.forked && !early { // the others report their status on it
		_ = r.Ctl.Close()
	}
	slog.Debug("warm run", "id", spec.ID, "kind", req.Kind, "forked", r.forked)
	if err != nil {
		return nil, warm.FailedHandOver(p, "warm runner", err)
	}
	return p, nil
}

// startRunner is the pool's starter of namespace runners (newRunner).
func (n *Backend) startRunner(req warm.Request) (warm.Runner, error) {
	r, err := n.newRunner(req)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// newRunner starts a namespace runner for req: a fresh cgroup (low CPU
// weight until taken), a bwrap sandbox whose workspace is the placeholder
// warmDir, and the interpreter with its stub, and waits until it is ready.
func (n *Backend) newRunner(req warm.Request) (*nsRunner, error) {
	if req.Fork {
		return n.forkRunner(req)
	}
	name := "warm-" + strconv.FormatInt(runSeq.Add(1), 10)
	spec := req.Base
	cg, err := n.newGroup(name, spec.Limits)
	if err != nil {
		return nil, err
	}
	_ = cg.SetCPUWeight(2)
	st, err := staging.New(name, n.tmpl != nil)
	if err != nil {
		_ = cg.Destroy()
		return nil, err
	}
	r, err := n.launchRunner(spec, cg, st, req.Exec)
	if err != nil {
		_ = cg.Destroy()
		_ = st.Release()
		return nil, err
	}
	return r, nil
}

// Prewarm starts a warm runner for runs like spec (see sandbox.Spec.Warm) ahead of
// the first such run. Specs that cannot run warm are ignored.
func (n *Backend) Prewarm(spec sandbox.Spec) {
	if req, ok := n.warmRequest(spec); ok {
		n.runners.Pool.Demand(req)
	}
}

// coldCmd is sandbox-init placing itself in cg, entering the template
// namespace per plan (if not empty) and executing bwrapArgv.
func (n *Backend) coldCmd(spec sandbox.Spec, cg *cgroup.Group, bwrapArgv []string, files []*os.File, plan string) *exec.Cmd {
	args := []string{helper.InitCommand}
	if plan != "" {
		args = append(args, helper.RootOption, plan)
	}
	args = append(args, strconv.Itoa(n.hostUID), strconv.Itoa(n.hostGID))
	args = append(append(args, cg.ProcsFiles()...), "--")
	cmd := exec.Command(n.opts.Exe, append(args, bwrapArgv...)...)
	cmd.Args[0] = "codexec"
	cmd.Env = spec.Env
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// namespaceExit maps bwrap's "128+signal" status back to a signal and adds
// what the cgroup knows (OOM kill, peak memory, CPU time, processes).
func namespaceExit(e *sandbox.Exit, cg *cgroup.Group) {
	if e.Signal == 0 && e.Code > 128 && e.Code <= 128+64 {
		e.Signal, e.Code = e.Code-128, -1
	}
	if (e.Signal != 0 || e.Code != 0) && cg.OOMKilled() {
		e.OOMKilled = true
	}
	e.MemoryPeakBytes = cg.MemoryPeak()
	u := cg.Usage()
	if u.CPUKnown { // the group's counters cover every process of the run
		e.Usage.CPUUser, e.Usage.CPUSystem, e.Usage.CPUFrom = u.CPUUser, u.CPUSystem, proc.FromCgroup
	}
	e.Usage.ProcessesPeak = u.ProcessesPeak
}

// readGroup reads cg's counters while its run goes on (proc.Hooks.Read).
func readGroup(cg *cgroup.Group, resetPeak bool) proc.Reading {
	u := cg.Usage()
	r := proc.Reading{CPUUser: u.CPUUser, CPUSystem: u.CPUSystem, CPUKnown: u.CPUKnown, MemoryPeak: cg.MemoryPeak()}
	if resetPeak {
		r.PeakReset = cg.ResetMemoryPeak()
	}
	return r
}

// limitedBuffer collects up to 64 KiB of probe output.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// AwaitWarm waits up to d for a ready runner of kind (WarmPython,
// WarmNode) and returns its kind's state; false if none became ready.
func (n *Backend) AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool) {
	return n.runners.AwaitWarm(kind, d)
}

// PoolStats returns the state of the warm runners.
func (n *Backend) PoolStats() []sandbox.PoolStat { return n.runners.PoolStats() }

// PoolTallies returns how many runs of each kind were served warm and cold.
func (n *Backend) PoolTallies() []sandbox.PoolTally { return n.runners.PoolTallies() }
