package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/container"
	"github.com/codexec/codexec/internal/sandbox/namespace"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

// SubprocessWarning is what subprocess mode lacks, as the server's log and
// doctor both say it.
const SubprocessWarning = "code runs as a plain host process with full filesystem and network access and no resource limits (see SECURITY.md)"

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
		slog.Warn("SANDBOX MODE subprocess: " + SubprocessWarning)
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
		slog.Warn("!!! SANDBOX MODE auto FELL BACK TO subprocess: the namespace sandbox is unavailable (" + err.Error() + "); " + SubprocessWarning + "; run `codexec doctor`")
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

// NamespaceBackend is the namespace backend as doctor checks it (no
// egress sockets, no warm runners started), or why it cannot run here.
func NamespaceBackend(ctx context.Context, cfg config.Config, env HostEnv, langs *runtime.Set) (*namespace.Backend, error) {
	return newNamespace(ctx, cfg, env, langs, nil, nil)
}

// ContainerBackend is the docker backend as doctor checks it (no egress
// sockets), or why it cannot run here.
func ContainerBackend(ctx context.Context, cfg config.Config, env HostEnv) (*container.Backend, error) {
	return container.New(ctx, containerOptions(cfg, env, nil))
}
