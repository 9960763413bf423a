package sandbox

import (
	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox/helper"

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
)

// NamespaceOptions configure the namespace backend. Zero values pick the
// defaults noted per field.
type NamespaceOptions struct {
	// Bwrap is the bubblewrap binary (default: /usr/bin/bwrap, else PATH).
	Bwrap string
	// Exe is the binary run as sandbox-init and sandbox-landlock (default:
	// HelperName next to the running executable if present — it starts much
	// faster — else the running executable itself).
	Exe string
	// UID and GID are the unprivileged host ids programs run as
	// (default 65534, "nobody").
	UID, GID int
	// OwnedRoot is the directory holding workspaces codexec created itself;
	// workspaces below it are chowned to UID. Other workspaces (a caller's
	// working_dir) are never changed: they are mounted read-only unless
	// Spec.DirWritable (see workspace.go).
	OwnedRoot string
	// Mask lists host paths hidden (empty tmpfs or /dev/null) when they lie
	// strictly below a workspace: ~/.ssh, the data directory, ….
	Mask []string
	// NoLandlock skips the in-sandbox Landlock step (helper.LandlockCommand).
	NoLandlock bool
	// ReadOnly lists extra host directories visible read-only at the same
	// path (e.g. the prefix of an interpreter installed outside /usr).
	ReadOnly []string
	// Prewarm lists runs to start warm runners for at once, beside the
	// start-up probe (see Prewarm); a failed probe stops them.
	Prewarm []Spec
	// Pool configures warm runners (see warm.go); Size 0 disables them.
	Pool PoolOptions
}

// Namespace runs every program in fresh user, pid, network, ipc, uts, mount
// and cgroup namespaces built by bubblewrap, as an unprivileged host uid with
// no capabilities, no_new_privs and a seccomp filter, inside its own cgroup
// (memory, CPU and pids limits, group kill, OOM detection). The file system
// is a tmpfs root with read-only /usr (and the /bin, /lib… links), a few /etc
// files, fresh /proc and /dev, a size-limited /tmp and the workspace (the
// only writable host directory) at its host path. Only loopback networking.
type Namespace struct {
	opts    NamespaceOptions
	cg      cgroup.Info
	seccomp []byte
	// launchers are pooled sandbox-init processes (launcher.go).
	launchers *launcherPool
	// warmHost keeps warm runners; its cleanups also track background
	// removal of finished runs' cgroups.
	warmHost
	// zygotes are the python fork-servers by warm key (zygote.go).
	zygMu   sync.Mutex
	zygotes map[string]*zygote
}

// runSeq numbers runs process-wide, so cgroup and staging names never
// collide between backends.
var runSeq atomic.Int64

var leftoverSweep sync.Once

// NewNamespace checks that the namespace backend can work here (bwrap,
// user namespaces, cgroups, seccomp) and returns it; the error says what is
// missing. It runs one trivial sandbox as a probe (a few milliseconds).
func NewNamespace(ctx context.Context, o NamespaceOptions) (*Namespace, error) {
	n, err := newNamespace(o)
	if err != nil {
		return nil, err
	}
	for _, spec := range o.Prewarm {
		n.Prewarm(spec)
	}
	if err := n.probe(ctx); err != nil {
		_ = n.Close()
		return nil, fmt.Errorf("namespace sandbox probe failed: %w", err)
	}
	return n, nil
}

func newNamespace(o NamespaceOptions) (*Namespace, error) {
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
	if os.Geteuid() != 0 {
		return nil, errors.New("the namespace sandbox needs codexec to run as root (to create cgroups and drop to an unprivileged uid)")
	}
	if err := userNamespacesEnabled(); err != nil {
		return nil, err
	}
	proc.SweepDeadRunsOnce()
	n := &Namespace{opts: o, cg: cgroup.Detect()}
	n.launchers = &launcherPool{n: n}
	n.warm = newWarmPool(o.Pool, n.startRunner)
	leftoverSweep.Do(func() {
		if k := cgroup.Sweep(n.cg); k > 0 {
			slog.Info("removed cgroups left by earlier codexec servers", "count", k)
		}
		sweepStages()
	})
	if !n.cg.Usable() {
		return nil, fmt.Errorf("resource limits unavailable: %s", n.cg)
	}
	if n.seccomp, err = seccompProgram(); err != nil {
		return nil, err
	}
	if err := acquireStagingRoot(); err != nil {
		return nil, fmt.Errorf("staging directory: %w", err)
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

// CgroupInfo describes the cgroup setup the backend uses.
func (n *Namespace) CgroupInfo() cgroup.Info { return n.cg }

func (n *Namespace) probe(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "codexec-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chown(dir, n.opts.UID, n.opts.GID); err != nil {
		return err
	}
	var out, errb limitedBuffer
	spec := Spec{ID: "probe", Argv: []string{"/bin/sh", "-c", "echo ok"}, Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Stdout: &out, Stderr: &errb,
		Limits: Limits{MemoryBytes: 64 << 20, Pids: 16, DiskBytes: 1 << 20}}
	p, err := n.startFresh(spec, "probe-"+strconv.FormatInt(runSeq.Add(1), 10)+"-"+strconv.Itoa(os.Getpid()))
	if err != nil {
		return err
	}
	ex, err := p.Wait()
	_ = p.Release(time.Second)
	if err != nil {
		return err
	}
	if ex.Code != 0 || string(trimNL(out.b)) != "ok" {
		return fmt.Errorf("exit %d signal %d: %s", ex.Code, ex.Signal, trimNL(errb.b))
	}
	return nil
}

// Name returns "namespace".
func (*Namespace) Name() string { return "namespace" }

// Isolated returns true.
func (*Namespace) Isolated() bool { return true }

// User is the unprivileged host user programs run as.
func (n *Namespace) User() confine.Identity { return confine.As(n.opts.UID, n.opts.GID) }

// Start starts spec in a fresh sandbox. spec.Network is refused. A warm
// runner is used when spec.Warm asks for one and one is ready; else a pooled
// launcher (already in its cgroup) when one is ready for spec.Limits;
// otherwise a cgroup and a launcher are made on the spot.
func (n *Namespace) Start(_ context.Context, spec Spec) (Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	if spec.Network {
		return nil, errors.New("sandbox: the namespace backend has no network access to grant")
	}
	if req, ok := parseWarm(spec); ok {
		if freq, ok := n.forkRequest(spec, req); ok {
			req = freq
		}
		return n.startCounted(spec, req)
	}
	return asProcess(n.startCold(spec))
}

// startCounted starts a run that a warm runner can serve (warm if one is
// ready), counted in flight until released so refills wait for its end.
func (n *Namespace) startCounted(spec Spec, req warmRequest) (Process, error) {
	return n.warm.serve(req, func(r warmRunner) (*proc.HostProc, error) { return n.startWarm(spec, req, r.(*nsRunner)) },
		func() (*proc.HostProc, error) { return n.startCold(spec) })
}

// startCold starts spec without a warm runner.
func (n *Namespace) startCold(spec Spec) (*proc.HostProc, error) {
	name := spec.ID + "-" + strconv.FormatInt(runSeq.Add(1), 10) + "-" + strconv.Itoa(os.Getpid())
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
func (n *Namespace) startFresh(spec Spec, name string) (*proc.HostProc, error) {
	cg, err := cgroup.New(n.cg, name, cgroup.Limits{MemoryBytes: spec.Limits.MemoryBytes, CPUs: spec.Limits.CPUs, Pids: spec.Limits.Pids})
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
func (n *Namespace) Close() error {
	n.warm.close()
	n.closeZygotes()
	n.launchers.close()
	n.cleanups.Wait()
	releaseStagingRoot()
	return nil
}

func (n *Namespace) start(spec Spec, name string, cg *cgroup.Group, w *launcher) (*proc.HostProc, error) {
	if spec.Background {
		_ = cg.SetCPUWeight(2)
	}
	if err := handOverWorkspace(spec, n.opts.OwnedRoot, n.opts.UID, n.opts.GID); err != nil {
		return nil, err
	}
	st, err := newStage(name)
	if err != nil {
		return nil, err
	}
	b := &bwrapArgs{n: n, stage: st, refs: w != nil}
	defer b.closeFiles()
	if err := b.build(spec); err != nil {
		_ = st.release()
		return nil, err
	}
	var p *proc.HostProc
	hooks := n.runHooks(cg, st, &p)
	bwrapArgv := append(append([]string{n.opts.Bwrap}, b.args...), spec.Argv...)
	if w != nil {
		p, err = proc.Launch(w.cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks, func(stdio [3]*os.File) (func() error, error) {
			err := w.send(bwrapArgv, spec.Env, stdio, b.files)
			_ = w.ctl.Close()
			return w.wait, err
		})
	} else {
		p, err = proc.Start(n.coldCmd(spec, cg, bwrapArgv, b.files), spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	}
	if err != nil {
		_ = st.release()
		return nil, fmt.Errorf("sandbox: start bwrap: %w", err)
	}
	return p, nil
}

// runHooks are the Process hooks of a run in cg whose staging mounts are st;
// *pp is the run's proc.HostProc once started.
func (n *Namespace) runHooks(cg *cgroup.Group, st *stage, pp **proc.HostProc) proc.Hooks {
	return proc.Hooks{
		Signal: func(sig syscall.Signal) error {
			if sig == syscall.SIGKILL {
				return cg.Kill()
			}
			// Not to bwrap itself: it would die and take the program with it
			// before the program could handle the signal.
			cg.Signal(sig, (*pp).Pid())
			return nil
		},
		AfterWait: func(e *Exit) { namespaceExit(e, cg) },
		// Once the group is empty nothing of the run is left; removing the
		// group and staging mounts is slow-ish (cgroup locks), so it happens
		// off the caller's path. Close waits for it.
		Cleanup: func() error {
			cg.Drain()
			n.cleanups.Add(1)
			go func() {
				defer n.cleanups.Done()
				if err := errors.Join(cg.Destroy(), st.release()); err != nil {
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
func (n *Namespace) startWarm(spec Spec, req warmRequest, r *nsRunner) (*proc.HostProc, error) {
	err := handOverWorkspace(spec, n.opts.OwnedRoot, n.opts.UID, n.opts.GID)
	if err == nil {
		err = n.bindWorkspace(r, spec.Dir, workspaceReadOnly(spec, n.opts.OwnedRoot))
	}
	if err == nil {
		err = r.cg.SetCPUWeight(1024)
	}
	if err != nil {
		n.destroyLater(r)
		return nil, err
	}
	var p *proc.HostProc
	hooks := n.runHooks(r.cg, r.st, &p)
	// Python runners report their status themselves (warm_early.go).
	early := !r.forked && req.kind == WarmPython
	stdout, stderr := r.stdout, r.stderr
	if early {
		if stdout, stderr, err = r.handOverStdio(); err != nil {
			n.destroyLater(r)
			return nil, err
		}
	}
	var e *earlyRun
	if early {
		e, hooks = newEarly(&r.stubRunner, hooks, &n.cleanups, func() { _ = r.cg.Kill() })
	}
	p = proc.Adopt(r.cmd, r.wait, r.stdin, stdout, stderr, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if r.forked {
		p.SetExit(func() Exit { return r.exit })
	}
	if early {
		e.attach(p)
	}
	_ = r.mntns.Close()
	_, err = r.ctl.Write(helper.EncodeRun(spec.Dir, spec.Env, req.code, req.args))
	if !r.forked && !early { // the others report their status on it
		_ = r.ctl.Close()
	}
	slog.Debug("warm run", "id", spec.ID, "kind", req.kind, "forked", r.forked)
	if err != nil {
		return nil, failedHandOver(p, "warm runner", err)
	}
	return p, nil
}

// Prewarm starts a warm runner for runs like spec (see Spec.Warm) ahead of
// the first such run. Specs that cannot run warm are ignored.
func (n *Namespace) Prewarm(spec Spec) {
	if req, ok := parseWarm(spec); ok {
		if freq, ok := n.forkRequest(spec, req); ok {
			req = freq
		}
		n.warm.demand(req)
	}
}

// HelperName is the small helper binary (cmd/codexec-sandbox) that runs the
// sandbox-init, sandbox-landlock and sandbox-fsize steps when installed
// next to codexec (see package helper).
const HelperName = helper.Name

// coldCmd is sandbox-init placing itself in cg and executing bwrapArgv.
func (n *Namespace) coldCmd(spec Spec, cg *cgroup.Group, bwrapArgv []string, files []*os.File) *exec.Cmd {
	args := []string{helper.InitCommand, strconv.Itoa(n.opts.UID), strconv.Itoa(n.opts.GID)}
	args = append(append(args, cg.ProcsFiles()...), "--")
	cmd := exec.Command(n.opts.Exe, append(args, bwrapArgv...)...)
	cmd.Args[0] = "codexec"
	cmd.Env = spec.Env
	cmd.ExtraFiles = files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// namespaceExit maps bwrap's "128+signal" status back to a signal and adds
// what the cgroup knows (OOM kill, peak memory).
func namespaceExit(e *Exit, cg *cgroup.Group) {
	if e.Signal == 0 && e.Code > 128 && e.Code <= 128+64 {
		e.Signal, e.Code = e.Code-128, -1
	}
	if (e.Signal != 0 || e.Code != 0) && cg.OOMKilled() {
		e.OOMKilled = true
	}
	e.MemoryPeakBytes = cg.MemoryPeak()
}

// limitedBuffer collects up to 64 KiB of probe output.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
