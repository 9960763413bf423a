package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/instance"
)

// A container outlives the server that started it: the engine (dockerd,
// conmon) keeps it running when the CLI attached to it dies with the server.
// Three things bound what a killed server leaves behind:
//
//   - The server's watchdog (proc.GuardContainers) lists the containers
//     labelled as the server's and kills and removes them as soon as the
//     server is gone, however it ended.
//   - A run's container ends by itself at the run's deadline (sandbox.Spec.Deadline),
//     enforced inside the container by its first process: `timeout` (coreutils
//     or busybox, from the image) runs the program with a SIGKILL deadline.
//     A process's first process in its pid namespace cannot be signalled by
//     the program (the kernel drops such signals from inside), so the
//     program cannot lift the deadline; when that first process exits, the
//     kernel kills everything left in the container.
//   - Every container carries the labels codexec.managed=true and
//     codexec.instance=<server name> (package instance); a server starting
//     removes the managed containers of servers that are gone (sweep).
//
// A warm container is started before its run and its deadline is known only
// at take time, so its first process is a shell (warmEntry) that starts the
// runner in the background and waits for the deadline on a FIFO the server
// holds open: at take time the server writes it and the shell becomes
// `timeout` watching a sentinel that ends, with the runner's status, when the
// runner ends. If the server dies before, the FIFO ends and the shell exits,
// taking the idle runner with it.

// Labels every container codexec creates carries.
const (
	labelManaged  = "codexec.managed"
	labelInstance = "codexec.instance"
)

// labelArgs are the CLI options that label a container as this server's.
func labelArgs() []string {
	return []string{"--label", labelManaged + "=true", "--label", labelInstance + "=" + instance.Self()}
}

// withDeadline prefixes a container command with a SIGKILL deadline d
// (whole seconds, rounded up); d <= 0 leaves it as it is.
func withDeadline(cmd []string, d time.Duration) []string {
	if d <= 0 {
		return cmd
	}
	return append([]string{"timeout", "-s", "KILL", deadlineSeconds(d)}, cmd...)
}

// deadlineSeconds is d in whole seconds, rounded up, at least 1; "0" (no
// deadline, in timeout's terms) for d <= 0.
func deadlineSeconds(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return strconv.FormatInt(int64(max(1, math.Ceil(d.Seconds()))), 10)
}

// sweep removes the managed containers of servers that are gone (running
// or not) and returns how many it removed. Containers of live servers, and
// unlabelled ones, are never touched.
func (c *Backend) sweep(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := combinedTracked(exec.CommandContext(ctx, c.cli, "ps", "-a", "--filter", "label="+labelManaged+"=true", "--format", "{{.ID}}"))
	if err != nil {
		return 0, fmt.Errorf("%s ps: %v: %s", c.opts.CLI, err, strings.TrimSpace(out))
	}
	ids := strings.Fields(out)
	if len(ids) == 0 {
		return 0, nil
	}
	args := append([]string{"inspect", "--format", `{{.Id}} {{index .Config.Labels "` + labelInstance + `"}}`}, ids...)
	// A container removed meanwhile makes inspect fail for it alone: the
	// others are still printed.
	out, _ = combinedTracked(exec.CommandContext(ctx, c.cli, args...))
	var dead []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && instance.Dead(f[1]) {
			dead = append(dead, f[0])
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	// One container per command, all at once: given several, podman's kill
	// and rm stop at the first that is gone (an --rm container that ended
	// meanwhile), rm even with status 0. Killed first: `podman rm -f` stops
	// a running container with SIGTERM and waits its stop timeout (10 s).
	var wg sync.WaitGroup
	errs := make([]error, len(dead))
	for i, id := range dead {
		wg.Go(func() {
			_, _ = combinedTracked(exec.CommandContext(ctx, c.cli, "kill", "--signal", "KILL", id))
			if out, err := combinedTracked(exec.CommandContext(ctx, c.cli, "rm", "-f", id)); err != nil && !noSuchContainer(out) {
				errs[i] = fmt.Errorf("%s rm %s: %v: %s", c.opts.CLI, id, err, strings.TrimSpace(out))
			}
		})
	}
	wg.Wait()
	return len(dead), errors.Join(errs...)
}

// warmRootPrefix starts the name of the temporary directory holding a
// server's warm container directories: its name follows (warmRootPrefix,
// server name, "-", random).
const warmRootPrefix = "codexec-warm-containers-"

// sweepWarmRoots removes the warm container directories of servers that
// are gone (their FIFOs and control sockets).
func sweepWarmRoots() {
	roots, _ := filepath.Glob(filepath.Join(os.TempDir(), warmRootPrefix+"*"))
	for _, r := range roots {
		id, _, ok := instance.Cut(strings.TrimPrefix(filepath.Base(r), warmRootPrefix))
		if ok && instance.Dead(id) {
			_ = os.RemoveAll(r)
		}
	}
}

// sweepAtStart runs sweep and logs what it did.
func (c *Backend) sweepAtStart(ctx context.Context) {
	n, err := c.sweep(ctx)
	switch {
	case err != nil:
		slog.Warn("could not remove containers left by earlier codexec servers", "err", err)
	case n > 0:
		slog.Info("removed containers left by earlier codexec servers", "count", n)
	}
}
