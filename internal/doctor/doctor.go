// Package doctor is `codexec doctor`: it reports which sandbox modes work
// on this host and why not, the limits each enforces, the disk limit,
// upstreams, egress settings and ACL grants earlier versions left behind.
// It builds each part the way the server would, through package app, and
// only reports: it changes nothing except, when asked, those ACL grants.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/container"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

// Run prints which sandbox modes work on this host and why not, and
// returns a non-zero exit code when the configured mode cannot run. It also
// reports ACL grants earlier versions left on host directories, and with
// repairACLs removes the ones codexec made.
func Run(ctx context.Context, cfg config.Config, env app.HostEnv, w io.Writer, repairACLs bool) int {
	langs := runtime.Discover(ctx, runtime.Overrides(cfg.Interpreters), env.Path)
	fmt.Fprintf(w, "configured mode: %s\n", cfg.SandboxMode)
	fmt.Fprintln(w, "subprocess: available (NO isolation: host filesystem, network, no resource limits)")
	printLimits(w, cfg, &subprocess.Backend{})
	nsErr := checkNamespace(ctx, cfg, env, langs, w)
	ctErr := checkContainer(ctx, cfg, env, langs, w)
	checkDisks(cfg, w)
	checkUpstreams(ctx, cfg, env, w)
	checkACLs(cfg, env, w, repairACLs)
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
			fmt.Fprintln(w, "WARNING: auto mode will FALL BACK TO subprocess: "+app.SubprocessWarning)
		}
	}
	printEgress(cfg, w, cfg.SandboxMode == config.ModeSubprocess || (cfg.SandboxMode == config.ModeAuto && nsErr != nil && ctErr != nil))
	if err != nil {
		fmt.Fprintf(w, "error: configured mode %s cannot run: %v\n", cfg.SandboxMode, err)
		return 1
	}
	return 0
}

func checkNamespace(ctx context.Context, cfg config.Config, env app.HostEnv, langs *runtime.Set, w io.Writer) error {
	b, err := app.NamespaceBackend(ctx, cfg, env, langs)
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
	printLimits(w, cfg, b)
	checkWarm(cfg, langs, b, w, runtime.Python, runtime.Node, runtime.Bash)
	return b.Close()
}

// warmBackend is a backend that keeps warm runners.
type warmBackend interface {
	Prewarm(sandbox.Spec)
	AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool)
}

// checkWarm prints the warm runner settings and starts one runner for
// each of the languages to show that they work, how long one takes and what
// it holds.
func checkWarm(cfg config.Config, langs *runtime.Set, b warmBackend, w io.Writer, warmLangs ...string) {
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

func checkContainer(ctx context.Context, cfg config.Config, env app.HostEnv, langs *runtime.Set, w io.Writer) error {
	if env.Rootless {
		fmt.Fprintln(w, "docker: not checked (this doctor runs in codexec's own user namespace, where auto mode needs no container engine; CODEXEC_SANDBOX_MODE=docker codexec doctor checks it)")
		return errors.New("not checked")
	}
	c, err := app.ContainerBackend(ctx, cfg, env)
	if err != nil {
		printContainerUnavailable(w, err)
		return err
	}
	fmt.Fprintf(w, "docker: available (%s, image %s, network %s)\n", cfg.DockerCLI, cfg.DockerImage, cfg.DockerNetwork)
	printLimits(w, cfg, c)
	if lack := container.Unsupported(); lack != "" {
		fmt.Fprintf(w, "  on this system docker mode runs each program in a container started for it; %s\n", lack)
		return c.Close()
	}
	if cfg.SandboxMode == config.ModeDocker {
		checkWarm(cfg, langs, c, w, runtime.Python, runtime.Node)
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
