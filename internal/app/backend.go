package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/container"
	"github.com/codexec/codexec/internal/sandbox/namespace"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

const subprocessWarning = "code runs as a plain host process with full filesystem and network access and no resource limits (see SECURITY.md)"

// SelectBackend returns the sandbox backend for cfg.SandboxMode. auto takes
// the first that works of namespace (as root, or without root in the
// server's own user namespace), docker (when a container engine answers
// and has the image) and subprocess, which it takes with a loud warning.
// In the rootless server's user namespace the namespace sandbox is the
// only choice (its checks passed before it was entered). An explicit mode
// that cannot run here is an error naming the reason. langs may be nil
// (then interpreters outside /usr are not made visible to namespace mode).
// prewarm are runs whose warm runners namespace mode starts at once;
// capture (nil: none) are the sockets every isolated sandbox gets for the
// egress owner (egress.Service.Capture).
func SelectBackend(ctx context.Context, cfg config.Config, env HostEnv, langs *runtime.Set, capture *sandbox.CaptureSpec, prewarm ...sandbox.Spec) (sandbox.Backend, error) {
	switch cfg.SandboxMode {
	case config.ModeSubprocess:
		slog.Warn("SANDBOX MODE subprocess: " + subprocessWarning)
		return subprocess.New(poolOptions(cfg)), nil
	case config.ModeNamespace:
		b, err := newNamespace(ctx, cfg, env, langs, capture, prewarm)
		if err != nil {
			return nil, fmt.Errorf("CODEXEC_SANDBOX_MODE=namespace cannot run on this host: %w (run `codexec doctor`)", err)
		}
		return b, nil
	case config.ModeDocker:
		b, err := container.New(ctx, containerOptions(cfg, env, capture))
		if err != nil {
			return nil, fmt.Errorf("CODEXEC_SANDBOX_MODE=docker cannot run on this host: %w (run `codexec doctor`)", err)
		}
		return b, nil
	case config.ModeAuto:
		b, err := newNamespace(ctx, cfg, env, langs, capture, prewarm)
		if err == nil {
			return b, nil
		}
		if env.Rootless {
			// The checks before the re-execution passed, so this is a fault,
			// not a host without the sandbox; programs started here would
			// also hold the server's capabilities in its namespace.
			return nil, fmt.Errorf("the namespace sandbox failed in codexec's own user namespace: %w (run `codexec doctor`; CODEXEC_SANDBOX_MODE=subprocess runs code unsandboxed)", err)
		}
		ct, cerr := container.New(ctx, containerOptions(cfg, env, capture))
		if cerr == nil {
			slog.Warn("sandbox mode auto chose docker: the namespace sandbox is unavailable (" + err.Error() + ")")
			return ct, nil
		}
		err = fmt.Errorf("%w; docker mode: %v", err, cerr)
		slog.Warn("!!! SANDBOX MODE auto FELL BACK TO subprocess: the namespace sandbox is unavailable (" + err.Error() + "); " + subprocessWarning + "; run `codexec doctor`")
		return subprocess.New(poolOptions(cfg)), nil
	}
	return nil, fmt.Errorf("unknown CODEXEC_SANDBOX_MODE %q", cfg.SandboxMode)
}

// internalDirs are codexec's own state: no caller directory may lie in
// them, and they are masked where a caller directory contains them.
func internalDirs(cfg config.Config) []string {
	return []string{cfg.DataDir, cfg.SandboxDir, cfg.LogDir, cfg.ScriptsDir, cfg.PackagesDir, disksDir(cfg)}
}

// privateDirs makes codexec's own state directories 0700. Other sessions'
// workspaces, other principals' scripts and the disk images live there:
// the sandbox user reaches its own workspace only through a mount, so it
// needs no access to them, and the server, acting on a workspace with the
// sandbox user's rights (a caller's working_dir may contain the data dir),
// then cannot list or read them for it either.
func privateDirs(dirs []string) {
	for _, d := range dirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 == 0 {
			continue
		}
		if err := os.Chmod(d, fi.Mode().Perm()&0o700); err != nil {
			slog.Warn("cannot make codexec's directory private", "dir", d, "err", err)
			continue
		}
		slog.Info("made codexec's directory private (0700)", "dir", d, "was", fmt.Sprintf("%o", fi.Mode().Perm()))
	}
}

// newGuard is the policy for caller-supplied directories (working_dir, cwd).
func newGuard(cfg config.Config, env HostEnv) *pathguard.Guard {
	return pathguard.New(pathguard.Options{Home: env.Home, Forbidden: forbidden(env),
		Internal: internalDirs(cfg), Writable: cfg.WritableRoots,
		OwnerRoots:     append(append([]string{}, cfg.AllowedCwdRoots...), cfg.WritableRoots...),
		PrincipalRoots: cfg.PrincipalRoots,
		LocalRoots:     localRoots(env.Home)})
}

// forbidden is what code never reaches and callers never name as a
// directory: the system trees and the credential directories of the user
// who started codexec and of every account in the passwd file. An account
// added later is not among them; its directories get no owner's rights
// until the next start (pathguard.Guard.Guards).
func forbidden(env HostEnv) []string {
	return pathguard.DefaultForbidden(env.Home, accountHomes("/etc/passwd")...)
}

// accountHomes lists the home directories in the passwd file at path (none
// if it cannot be read).
func accountHomes(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		slog.Warn("cannot read the accounts' home directories; only the server user's credentials are refused", "err", err)
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 7 && filepath.IsAbs(f[5]) && !slices.Contains(out, filepath.Clean(f[5])) {
			out = append(out, filepath.Clean(f[5]))
		}
	}
	return out
}

// localRoots are where the local caller (stdio) is entitled to have code
// use its directories with their owner's rights: the home of the user who
// started codexec and its temp directory (see pathguard.OwnerRights).
func localRoots(home string) []string {
	var out []string
	for _, d := range []string{home, os.TempDir()} {
		if d != "" && d != "/" && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// errNamespaceNeedsLinux is why the namespace sandbox is unavailable on
// other systems, whatever the user: it is made of Linux kernel features.
var errNamespaceNeedsLinux = errors.New("needs Linux (its namespaces, cgroups, seccomp and Landlock); " +
	"on this system auto mode uses docker mode when a container engine answers, else subprocess")

// newNamespace is the namespace backend, or why it cannot run: as root, or
// without root inside the server's own user namespace; a server without
// root outside one says why it is not (env.NoRootless).
func newNamespace(ctx context.Context, cfg config.Config, env HostEnv, langs *runtime.Set, capture *sandbox.CaptureSpec, prewarm []sandbox.Spec) (*namespace.Backend, error) {
	if goruntime.GOOS != "linux" {
		return nil, errNamespaceNeedsLinux
	}
	if env.NoRootless != nil {
		return nil, fmt.Errorf("codexec runs without root and cannot use the namespace sandbox as this user: %w", env.NoRootless)
	}
	return namespace.New(ctx, namespaceOptions(cfg, env, langs, capture, prewarm))
}

func namespaceOptions(cfg config.Config, env HostEnv, langs *runtime.Set, capture *sandbox.CaptureSpec, prewarm []sandbox.Spec) namespace.Options {
	mask := append(forbidden(env), internalDirs(cfg)...)
	return namespace.Options{OwnedRoot: cfg.SandboxDir, Mask: mask, ReadOnly: interpreterPrefixes(langs),
		Pool:         poolOptions(cfg),
		Prewarm:      prewarm,
		CaptureSpec:  capture,
		CgroupParent: cfg.CgroupParent,
		Rootless:     env.Rootless}
}

// interpreterPrefixes returns, for every interpreter outside /usr, the
// installation prefix to expose read-only (the parent of its bin directory,
// e.g. ~/.pyenv/versions/3.12.1).
func interpreterPrefixes(langs *runtime.Set) []string {
	if langs == nil {
		return nil
	}
	var out []string
	for _, p := range langs.Paths() {
		if strings.HasPrefix(p, "/usr/") {
			continue
		}
		dir := filepath.Dir(p)
		if filepath.Base(dir) == "bin" {
			dir = filepath.Dir(dir)
		}
		out = append(out, dir)
	}
	return out
}

// poolOptions are the warm runner settings (CODEXEC_POOL_*).
func poolOptions(cfg config.Config) sandbox.PoolOptions {
	return sandbox.PoolOptions{Size: cfg.PoolSize, Burst: cfg.PoolBurst, Idle: cfg.PoolIdle, MemoryBytes: cfg.PoolMemoryBytes, Fork: cfg.PoolFork == "on"}
}

func containerOptions(cfg config.Config, env HostEnv, capture *sandbox.CaptureSpec) container.Options {
	return container.Options{CLI: cfg.DockerCLI, Image: cfg.DockerImage, Network: cfg.DockerNetwork,
		Pool: poolOptions(cfg), OwnedRoot: cfg.SandboxDir, Mask: append(forbidden(env), internalDirs(cfg)...), CaptureSpec: capture}
}

// Doctor prints which sandbox modes work on this host and why not, and
// returns a non-zero exit code when the configured mode cannot run. It also
// reports ACL grants earlier versions left on host directories, and with
// repairACLs removes the ones codexec made.
func Doctor(ctx context.Context, cfg config.Config, env HostEnv, w io.Writer, repairACLs bool) int {
	langs := runtime.Discover(ctx, runtime.Overrides(cfg.Interpreters), env.Path)
	fmt.Fprintf(w, "configured mode: %s\n", cfg.SandboxMode)
	fmt.Fprintln(w, "subprocess: available (NO isolation: host filesystem, network, no resource limits)")
	doctorLimits(w, cfg, &subprocess.Backend{})
	nsErr := doctorNamespace(ctx, cfg, env, langs, w)
	ctErr := doctorContainer(ctx, cfg, env, langs, w)
	doctorDisks(cfg, w)
	doctorUpstreams(ctx, cfg, env, w)
	doctorACLs(cfg, env, w, repairACLs)
	var err error
	switch cfg.SandboxMode {
	case config.ModeNamespace:
		err = nsErr
	case config.ModeDocker:
		err = ctErr
	case config.ModeAuto:
		switch {
		case nsErr == nil && env.Rootless:
			fmt.Fprintln(w, "auto mode will use: namespace (without root)")
		case nsErr == nil:
			fmt.Fprintln(w, "auto mode will use: namespace")
		case ctErr == nil:
			fmt.Fprintln(w, "auto mode will use: docker (the namespace sandbox is unavailable)")
		default:
			fmt.Fprintln(w, "WARNING: auto mode will FALL BACK TO subprocess: "+subprocessWarning)
		}
	}
	doctorEgress(cfg, w, cfg.SandboxMode == config.ModeSubprocess || (cfg.SandboxMode == config.ModeAuto && nsErr != nil && ctErr != nil))
	if err != nil {
		fmt.Fprintf(w, "error: configured mode %s cannot run: %v\n", cfg.SandboxMode, err)
		return 1
	}
	return 0
}

func doctorNamespace(ctx context.Context, cfg config.Config, env HostEnv, langs *runtime.Set, w io.Writer) error {
	b, err := newNamespace(ctx, cfg, env, langs, nil, nil)
	if err != nil {
		fmt.Fprintf(w, "namespace: UNAVAILABLE: %v\n", err)
		return err
	}
	as := "as root"
	if env.Rootless {
		as = fmt.Sprintf("without root, as uid %d in a user namespace of codexec's own; programs run as that user, mapped to an unprivileged id inside", os.Getuid())
	}
	cg := b.CgroupInfo().String()
	if b.CgroupInfo().Version == 0 {
		cg = "no cgroup this user may use: memory and file size are limited per process and the process count per sandbox (resource limits), CPU only by the time limit; docs/sandbox.md says how to delegate one"
	}
	fmt.Fprintf(w, "namespace: available %s (bubblewrap, user/pid/net/ipc/uts/mount namespaces, seccomp, Landlock where the kernel has it, %s)\n", as, cg)
	doctorLimits(w, cfg, b)
	doctorWarm(cfg, langs, b, w, runtime.Python, runtime.Node, runtime.Bash)
	return b.Close()
}

// warmBackend is a backend that keeps warm runners.
type warmBackend interface {
	Prewarm(sandbox.Spec)
	AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool)
}

// doctorWarm prints the warm runner settings and starts one runner for
// each of the languages to show that they work, how long one takes and what
// it holds.
func doctorWarm(cfg config.Config, langs *runtime.Set, b warmBackend, w io.Writer, warmLangs ...string) {
	fmt.Fprintf(w, "warm runners: %d per language (CODEXEC_POOL_SIZE), idle expiry %s, memory cap %d MiB\n",
		cfg.PoolSize, cfg.PoolIdle, cfg.PoolMemoryBytes>>20)
	if cfg.PoolSize == 0 {
		return
	}
	for _, l := range []struct{ lang, kind, flag string }{{runtime.Python, sandbox.WarmPython, "-c"}, {runtime.Node, sandbox.WarmNode, "-e"},
		{runtime.Bash, sandbox.WarmBash, "-c"}} {
		in := langs.Get(l.lang)
		if in.Err != nil || !slices.Contains(warmLangs, l.lang) {
			continue
		}
		t0 := time.Now()
		b.Prewarm(sandbox.Spec{Argv: []string{in.Path, l.flag, ""}, Env: []string{"PATH=/usr/bin:/bin"}, Warm: l.kind,
			Limits: sandbox.Limits{MemoryBytes: cfg.MemoryLimitBytes, CPUs: cfg.CPULimit, Pids: cfg.PidsLimit, DiskBytes: cfg.DiskLimitBytes}})
		fmt.Fprintf(w, "  %s: %s\n", l.kind, awaitWarm(b, l.kind, t0))
	}
}

func awaitWarm(b warmBackend, kind string, t0 time.Time) string {
	s, ok := b.AwaitWarm(kind, 20*time.Second)
	if !ok {
		return "NO runner became ready within 20 s (runs start cold; see the server log)"
	}
	return fmt.Sprintf("runner ready in %d ms, holding %.1f MiB", time.Since(t0).Milliseconds(), float64(s.MemoryBytes)/(1<<20))
}

func doctorContainer(ctx context.Context, cfg config.Config, env HostEnv, langs *runtime.Set, w io.Writer) error {
	if env.Rootless {
		fmt.Fprintln(w, "docker: not checked (this doctor runs in codexec's own user namespace, where auto mode needs no container engine; CODEXEC_SANDBOX_MODE=docker codexec doctor checks it)")
		return errors.New("not checked")
	}
	c, err := container.New(ctx, containerOptions(cfg, env, nil))
	if err != nil {
		printContainerUnavailable(w, err)
		return err
	}
	fmt.Fprintf(w, "docker: available (%s, image %s, network %s)\n", cfg.DockerCLI, cfg.DockerImage, cfg.DockerNetwork)
	doctorLimits(w, cfg, c)
	if lack := container.Unsupported(); lack != "" {
		fmt.Fprintf(w, "  on this system docker mode runs each program in a container started for it; %s\n", lack)
		return c.Close()
	}
	if cfg.SandboxMode == config.ModeDocker {
		doctorWarm(cfg, langs, c, w, runtime.Python, runtime.Node)
	}
	return c.Close()
}

// printContainerUnavailable says why docker mode cannot run; for a missing
// image, the exact commands that build it (also where the binary was
// installed without the source tree).
func printContainerUnavailable(w io.Writer, err error) {
	var missing *container.ImageError
	if !errors.As(err, &missing) {
		fmt.Fprintf(w, "docker: UNAVAILABLE: %v\n", err)
		return
	}
	fmt.Fprintf(w, "docker: UNAVAILABLE: %s\n", missing.Missing())
	fmt.Fprintf(w, "  build the image where Dockerfile.sandbox is (codexec's source tree):\n    %s\n", missing.BuildCommand())
	fmt.Fprintf(w, "  or anywhere, from the copy inside this binary:\n    codexec doctor --print-dockerfile > Dockerfile.sandbox && %s\n",
		missing.BuildCommand())
}
