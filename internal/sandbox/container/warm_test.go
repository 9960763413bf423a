//go:build linux

package container

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// newTestContainer returns a container backend on the local test image
// (scripts/sandbox-test-image.sh; podman when docker has no engine; extra
// "node" for the image with node), or skips.
func newTestContainer(t *testing.T, pool sandbox.PoolOptions, extra ...string) *Backend {
	t.Helper()
	return newTestContainerWith(t, func(o *Options) { o.Pool = pool }, extra...)
}

// newTestContainerWith is newTestContainer with options set by set.
func newTestContainerWith(t testing.TB, set func(*Options), extra ...string) *Backend {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("warm containers need root beside a rootful engine")
	}
	cli := "docker"
	if exec.Command("docker", "info").Run() != nil {
		cli = "podman"
	}
	if _, err := exec.LookPath(cli); err != nil {
		t.Skipf("no docker-compatible CLI: %v", err)
	}
	image := "codexec-test-sandbox"
	if len(extra) > 0 {
		image += "-" + extra[0] // the image with node: "node"
	}
	if out, err := exec.Command("bash", append([]string{"../../../scripts/sandbox-test-image.sh", cli, image}, extra...)...).CombinedOutput(); err != nil {
		t.Skipf("building %s: %v\n%s", image, err, out)
	}
	o := Options{CLI: cli, Image: image, OwnedRoot: sandboxtest.OwnedRoot}
	set(&o)
	c, err := New(context.Background(), o)
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestContainerWarm checks that runs served by warm containers keep the
// semantics of cold ones (sandboxtest.WarmSemantics).
func TestContainerWarm(t *testing.T) {
	sandboxtest.WarmSemantics(t, newTestContainer(t, sandbox.PoolOptions{Size: 1}), sandbox.WarmPython, t.TempDir(), "/workspace", 65534)
}

// TestContainerWarmSoak runs pooled runs at concurrency 2, then closes the
// backend and checks that no container, control directory, child process
// or descriptor is left. 30 runs by default; CODEXEC_SOAK_RUNS sets more.
func TestContainerWarmSoak(t *testing.T) {
	runs := 30
	if n, err := strconv.Atoi(os.Getenv("CODEXEC_SOAK_RUNS")); err == nil && n > 0 {
		runs = n
	}
	fdsBefore := sandboxtest.CountFDs(t)
	c := newTestContainer(t, sandbox.PoolOptions{Size: 2})
	sandboxtest.SoakRuns(t, runs, 2, func(i int, ws string) sandboxtest.Result {
		c.AwaitWarm(sandbox.WarmPython, 5*time.Second)
		return sandboxtest.Run(t, c, sandboxtest.WarmSpec(sandbox.WarmPython, ws, fmt.Sprintf("print(%d)", i)))
	})
	warm := sandboxtest.PoolHits(c)
	t.Logf("%d runs, %d served warm", runs, warm)
	if warm < uint64(runs)/2 {
		t.Errorf("only %d of %d runs were served warm", warm, runs)
	}
	root := c.warmRoot
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := exec.Command(c.cli, "ps", "-a", "--format", "{{.Names}}").Output()
	for _, name := range strings.Fields(string(out)) {
		if strings.HasPrefix(name, "codexec-warm-") && strings.HasSuffix(name, "-"+strconv.Itoa(os.Getpid())) {
			t.Errorf("container left: %s", name)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("control directory root left: %v", err)
	}
	sandboxtest.CheckNoLeaks(t, fdsBefore)
}

// TestContainerWarmNode checks node runs served by warm containers.
func TestContainerWarmNode(t *testing.T) {
	sandboxtest.WarmSemantics(t, newTestContainer(t, sandbox.PoolOptions{Size: 1}, "node"), sandbox.WarmNode, t.TempDir(), "/workspace", 65534)
}
