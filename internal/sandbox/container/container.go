package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// Backend runs each program in its own container through a
// docker-compatible CLI: `run --rm`,
// no network, memory/CPU/pids limits, read-only root, size-limited /tmp
// tmpfs, the workspace mounted at /workspace, all capabilities dropped and
// no-new-privileges. One container lives exactly as long as its sandbox.Process, so
// sessions keep one container. If the server is killed, its watchdog removes
// its containers (proc.GuardContainers); a run's container also ends by
// itself at the run's deadline, and a server starting removes the containers
// of servers that are gone (life.go).
type Backend struct {
	opts Options
	cli  string
	seq  atomic.Int64
	// runners keeps ready containers; warmRoot holds their control
	// directories.
	runners  warm.Host
	warmRoot string
	// owners mounts callers' directories with their owner's rights
	// (callerdir.go).
	owners owners
	// held is which run limits the engine applies (limits.go).
	held heldLimits
}

// NewContainer checks that the CLI exists and the image is present locally;
// a missing image is an *ImageError, which carries the build command.
func New(ctx context.Context, o Options) (*Backend, error) {
	if o.CLI == "" {
		o.CLI = "docker"
	}
	if o.Network == "" {
		o.Network = "none"
	}
	if o.UID == 0 {
		o.UID = 65534
	}
	o, notes := adaptTo(runtime.GOOS, o)
	if err := checkCapture(o); err != nil {
		return nil, err
	}
	cli, err := exec.LookPath(o.CLI)
	if err != nil {
		return nil, fmt.Errorf("container CLI %q not found on PATH: install docker or podman, or set CODEXEC_DOCKER_CLI to the one installed", o.CLI)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, "image", "inspect", "--format", "{{.Id}}", o.Image)
	if out, err := combinedTracked(cmd); err != nil {
		return nil, inspectError(o.CLI, o.Image, err, out)
	}
	for _, n := range notes {
		slog.Info(n)
	}
	proc.SweepDeadRunsOnce()
	c := &Backend{opts: o, cli: cli}
	c.held = c.probeHeld(ctx)
	c.sweepAtStart(ctx)
	proc.GuardContainers(cli, labelInstance+"="+instance.Self())
	sweepWarmRoots()
	if o.Pool.Size > 0 || o.CaptureSpec.Enabled() {
		if c.warmRoot, err = os.MkdirTemp("", warmRootPrefix+instance.Self()+"-"); err != nil {
			return nil, err
		}
		if err := os.Chmod(c.warmRoot, 0o711); err != nil {
			return nil, err
		}
	}
	if o.Pool.Size > 0 {
		c.runners.Pool = warm.NewPool(o.Pool, c.newRunner)
	}
	return c, nil
}

func combinedTracked(cmd *exec.Cmd) (string, error) {
	var b limitedBuffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := proc.RunTracked(cmd)
	return string(b.b), err
}

// podman reports whether the CLI is podman's own (whose run can write the
// container's pid to a file).
func (c *Backend) podman() bool { return filepath.Base(c.cli) == "podman" }

// Name returns "docker".
func (*Backend) Name() string { return "docker" }

// Isolated returns true.
func (*Backend) Isolated() bool { return true }

// User is the unprivileged host user programs run as.
func (c *Backend) User() confine.Identity { return confine.As(c.opts.UID, c.opts.UID) }

// Start runs spec in a new container named after spec.ID, or in a warm
// container when spec can run in one and one is ready.
func (c *Backend) Start(_ context.Context, spec sandbox.Spec) (sandbox.Process, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	if spec.Network {
		return nil, errors.New("sandbox: the container backend does not grant host networking")
	}
	if err := refusal(runtime.GOOS, spec); err != nil {
		return nil, err
	}
	if req, ok := c.warmRequest(spec); ok {
		return c.serveWarm(spec, req)
	}
	return warm.AsProcess(c.startCold(spec))
}

// startCold runs spec in a container started for it.
func (c *Backend) startCold(spec sandbox.Spec) (*proc.HostProc, error) {
	if err := c.grantWorkspace(spec); err != nil {
		return nil, err
	}
	name := "codexec-" + sanitizeName(spec.ID) + "-" + strconv.FormatInt(c.seq.Add(1), 10)
	src, st, err := c.workspaceSource(spec, name)
	if err != nil {
		return nil, err
	}
	g, ctCmd, extra, err := c.gateIfCaptured(withDeadline(containerArgv(spec.Argv, c.mappedDir(spec)), spec.Deadline))
	if err != nil {
		_ = st.Release()
		return nil, err
	}
	cmd := exec.Command(c.cli, c.runArgs(spec, name, src, c.target(spec), ctCmd, extra...)...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}
	cmd.SysProcAttr = cliSysProcAttr()
	var killed atomic.Bool
	hooks := c.hooks(name, spec, &killed)
	rm := hooks.Cleanup
	hooks.Cleanup = func() error { return errors.Join(rm(), st.Release()) }
	p, err := proc.Start(cmd, spec.Stdin, spec.Stdout, spec.Stderr, hooks)
	if err != nil {
		_ = st.Release()
		g.close()
		return nil, fmt.Errorf("sandbox: start %s: %w", c.opts.CLI, err)
	}
	// The CLI's own usage is not the container's: nothing is measured.
	// Set before captureCold, whose watcher may already wait on p.
	p.SetPath(proc.PathCold)
	if err := c.captureCold(p, g, name, spec); err != nil {
		return nil, err
	}
	return p, nil
}

// grantWorkspace hands codexec's own workspace to the container user,
// where the server does (handsOver).
func (c *Backend) grantWorkspace(spec sandbox.Spec) error {
	if !handsOver(runtime.GOOS, os.Geteuid()) {
		return nil
	}
	return sandbox.HandOverWorkspace(spec, c.opts.OwnedRoot, c.opts.UID, c.opts.UID)
}

// workspaceArgs mount spec's workspace, from the host path src, where the
// container sees it (target; read-only for a caller's directory not made
// writable) and hide masked paths below it.
func (c *Backend) workspaceArgs(spec sandbox.Spec, src, target string) []string {
	mode := ":rw"
	if sandbox.WorkspaceReadOnly(spec, c.opts.OwnedRoot) {
		mode = ":ro"
	}
	a := []string{"-v", src + ":" + target + mode}
	for _, m := range sandbox.MasksBelow(c.opts.Mask, spec.Dir, target, c.reachUID(spec)) {
		if m.Dir {
			a = append(a, "--tmpfs", m.Path+":ro,size=4k,mode=0000")
		} else {
			a = append(a, "-v", "/dev/null:"+m.Path+":ro")
		}
	}
	return a
}

// hooks signal and remove the container name and decode the CLI's exit of
// spec's run; killed records our own SIGKILL.
func (c *Backend) hooks(name string, spec sandbox.Spec, killed *atomic.Bool) proc.Hooks {
	l, started := spec.Limits, time.Now()
	return proc.Hooks{
		Signal: func(sig syscall.Signal) error {
			if sig == syscall.SIGKILL {
				killed.Store(true)
			}
			return c.cliQuiet("kill", "--signal", strconv.Itoa(int(sig)), name)
		},
		AfterWait: func(e *sandbox.Exit) {
			// The CLI reports 128+signal; 137 without our own kill, before
			// the run's own deadline, is the memory limit (podman never sets
			// OOMKilled).
			if e.Signal == 0 && e.Code > 128 && e.Code <= 128+64 {
				e.Signal, e.Code = e.Code-128, -1
				e.OOMKilled = e.Signal == 9 && !killed.Load() && l.MemoryBytes > 0 &&
					(spec.Deadline <= 0 || time.Since(started) < spec.Deadline)
			}
		},
		Cleanup: func() error { return c.cliQuiet("rm", "-f", name) },
	}
}

// runArgs is the CLI's run command for spec, running cmd (as the container
// sees it) in a container labelled as this server's, with the workspace
// from the host path src at target; extra options go before the image.
func (c *Backend) runArgs(spec sandbox.Spec, name, src, target string, cmd []string, extra ...string) []string {
	l := spec.Limits
	a := []string{"run", "--rm", "-i", "--name", name, "--network", c.opts.Network,
		"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--user", fmt.Sprintf("%d:%d", c.opts.UID, c.opts.UID)}
	a = append(append(a, c.workspaceArgs(spec, src, target)...), "-w", target)
	if l.MemoryBytes > 0 {
		m := strconv.FormatInt(l.MemoryBytes, 10)
		a = append(a, "--memory", m, "--memory-swap", m)
	}
	if l.CPUs > 0 {
		a = append(a, "--cpus", strconv.FormatFloat(l.CPUs, 'f', -1, 64))
	}
	if l.Pids > 0 {
		a = append(a, "--pids-limit", strconv.Itoa(l.Pids))
	}
	if spec.TmpDir != "" {
		a = append(a, "-v", spec.TmpDir+":/tmp:rw")
	} else {
		a = append(a, "--tmpfs", fmt.Sprintf("/tmp:rw,size=%d,mode=1777", tmpfsBytes(l)))
	}
	if spec.ProgramDir != "" {
		a = append(a, "-v", spec.ProgramDir+":"+sandbox.ProgramPath+":ro")
	}
	for _, m := range c.readOnlyMounts(spec) {
		t := m.Target
		if t == "" {
			t = m.Host
		}
		a = append(a, "-v", m.Host+":"+t+":ro")
	}
	for _, kv := range containerEnv(spec.Env, target) {
		a = append(a, "-e", kv)
	}
	a = append(append(append(a, labelArgs()...), extra...), c.opts.Image)
	return append(a, cmd...)
}

// readOnlyMounts are the files and directories mounted read-only into
// spec's container: the run's own, then the network capture's files (the
// resolver configuration and CA bundle), over what the image has there.
func (c *Backend) readOnlyMounts(spec sandbox.Spec) []sandbox.Mount {
	if !c.opts.CaptureSpec.Enabled() {
		return spec.Mounts
	}
	return append(slices.Clip(spec.Mounts), c.opts.CaptureSpec.Files...)
}

// containerEnv keeps the run's variables except PATH (the image has its
// own) and points HOME at the workspace mount, target.
func containerEnv(env []string, target string) []string {
	var out []string
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "PATH="):
		case strings.HasPrefix(kv, "HOME="):
			out = append(out, "HOME="+target)
		default:
			out = append(out, kv)
		}
	}
	return out
}

// containerArgv maps the host interpreter path to the image's (by name:
// python3.11 → python3, node, bash) and host workspace paths to /workspace.
func containerArgv(argv []string, dir string) []string {
	out := append([]string(nil), argv...)
	base := filepath.Base(argv[0])
	if strings.HasPrefix(base, "python3") {
		base = "python3"
	}
	out[0] = base
	copy(out[1:], containerArgs(out[1:], dir))
	return out
}

// containerArgs maps host workspace paths in args (below dir) to
// /workspace; an empty dir maps nothing.
func containerArgs(args []string, dir string) []string {
	out := slices.Clone(args)
	if dir == "" {
		return out
	}
	for i, a := range out {
		if a == dir || strings.HasPrefix(a, dir+"/") {
			out[i] = sandbox.WorkspacePath + strings.TrimPrefix(a, dir)
		}
	}
	return out
}

func (c *Backend) cliQuiet(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := combinedTracked(exec.CommandContext(ctx, c.cli, args...))
	if err != nil && noSuchContainer(out) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", c.opts.CLI, args[0], err, strings.TrimSpace(out))
	}
	return nil
}

// noSuchContainer reports whether CLI output says a container is gone.
func noSuchContainer(out string) bool {
	low := strings.ToLower(out)
	return strings.Contains(low, "no such container") || strings.Contains(low, "no container with")
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// AwaitWarm waits up to d for a ready runner of kind (WarmPython,
// WarmNode) and returns its kind's state; false if none became ready.
func (c *Backend) AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool) {
	return c.runners.AwaitWarm(kind, d)
}

// PoolStats returns the state of the warm containers.
func (c *Backend) PoolStats() []sandbox.PoolStat { return c.runners.PoolStats() }

// PoolTallies returns how many runs of each kind were served warm and cold.
func (c *Backend) PoolTallies() []sandbox.PoolTally { return c.runners.PoolTallies() }

// limitedBuffer collects up to 64 KiB of CLI output.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 64<<10 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}
