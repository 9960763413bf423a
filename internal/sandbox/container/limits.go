package container

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
)

// defaultTmpfsBytes sizes /tmp when the limits set no disk size: a tmpfs
// without a size could take half the host's memory.
const defaultTmpfsBytes = 256 << 20

// tmpfsBytes is the size of the /tmp tmpfs of a run with limits l.
func tmpfsBytes(l sandbox.Limits) int64 {
	if l.DiskBytes <= 0 {
		return defaultTmpfsBytes
	}
	return l.DiskBytes
}

// heldLimits is which of the run options --memory, --pids-limit and --cpus
// the container engine applies. A rootful engine applies all three; a
// rootless one only those whose cgroup controller was delegated to its
// user (none on cgroup v1), and it ignores the others with a warning.
type heldLimits struct{ memory, pids, cpu bool }

// probeHeld asks the engine which limits it applies. A server running as
// root drives a rootful engine, which applies them all; otherwise the
// engine's own report decides, and a report that cannot be had counts as
// none held (a limit is never claimed on a guess).
func (c *Backend) probeHeld(ctx context.Context) heldLimits {
	if os.Geteuid() == 0 {
		return heldLimits{true, true, true}
	}
	format := "{{.MemoryLimit}} {{.PidsLimit}} {{.CPUCfsQuota}}"
	if c.podman() {
		format = "{{.Host.CgroupControllers}}"
	}
	var out, errOut limitedBuffer
	cmd := exec.CommandContext(ctx, c.cli, "info", "--format", format)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := proc.RunTracked(cmd); err != nil {
		slog.Warn("docker mode: the container engine did not say which resource limits it applies; results report none",
			"cli", c.opts.CLI, "err", err, "output", strings.TrimSpace(string(errOut.b)))
		return heldLimits{}
	}
	return parseHeld(string(out.b), c.podman())
}

// parseHeld reads `info`'s answer: podman's list of cgroup controllers it
// may use ("[cpu memory pids]"), or docker's three booleans.
func parseHeld(out string, podman bool) heldLimits {
	f := strings.Fields(strings.Trim(strings.TrimSpace(out), "[]"))
	if podman {
		return heldLimits{memory: slices.Contains(f, "memory"), pids: slices.Contains(f, "pids"), cpu: slices.Contains(f, "cpu")}
	}
	is := func(i int) bool { return len(f) == 3 && f[i] == "true" }
	return heldLimits{memory: is(0), pids: is(1), cpu: is(2)}
}

// Enforced reports the limits runArgs gives spec's container: memory, CPU
// and processes through the engine's run options when set and applied,
// /tmp a sized tmpfs (spec.TmpDir instead: that directory's file system
// bounds it, the caller says how).
func (c *Backend) Enforced(spec sandbox.Spec) sandbox.Enforcement {
	l, h := spec.Limits, c.held
	e := sandbox.Enforcement{Memory: held(h.memory, l.MemoryBytes), Pids: held(h.pids, l.Pids), CPU: held(h.cpu, l.CPUs),
		Disk: sandbox.TmpfsDisk(tmpfsBytes(l))}
	if spec.TmpDir != "" {
		e.Disk = sandbox.EnforcedNone
	}
	return e
}

// held is the mechanism of a limit the engine applies (ok), if set.
func held[N int | int64 | float64](ok bool, limit N) string {
	if !ok {
		return sandbox.EnforcedNone
	}
	return sandbox.Mechanism(limit, sandbox.EnforcedContainer)
}
