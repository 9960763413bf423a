package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newTestContainer returns a container backend on the local test image
// (scripts/sandbox-test-image.sh; podman when docker has no engine; extra
// "node" for the image with node), or skips.
func newTestContainer(t *testing.T, pool PoolOptions, extra ...string) *Container {
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
	if out, err := exec.Command("bash", append([]string{"../../scripts/sandbox-test-image.sh", cli, image}, extra...)...).CombinedOutput(); err != nil {
		t.Skipf("building %s: %v\n%s", image, err, out)
	}
	c, err := NewContainer(context.Background(), ContainerOptions{CLI: cli, Image: image, Pool: pool, OwnedRoot: testOwnedRoot})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestContainerWarm checks that runs served by warm containers keep the
// semantics of cold ones (testWarmSemantics).
func TestContainerWarm(t *testing.T) {
	testWarmSemantics(t, newTestContainer(t, PoolOptions{Size: 1}), WarmPython, t.TempDir(), "/workspace", 65534)
}

// TestContainerWarmSoak runs pooled runs at concurrency 2, then closes the
// backend and checks that no container, control directory, child process
// or descriptor is left. 30 runs by default; CODEXEC_SOAK_RUNS sets more.
func TestContainerWarmSoak(t *testing.T) {
	runs := 30
	if n, err := strconv.Atoi(os.Getenv("CODEXEC_SOAK_RUNS")); err == nil && n > 0 {
		runs = n
	}
	fdsBefore := countFDs(t)
	c := newTestContainer(t, PoolOptions{Size: 2})
	soakRuns(t, runs, 2, func(i int, ws string) runResult {
		c.AwaitWarm(WarmPython, 5*time.Second)
		return runSpec(t, c, warmSpec(WarmPython, ws, fmt.Sprintf("print(%d)", i)))
	})
	warm := poolHits(c)
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
	checkNoLeaks(t, fdsBefore)
}

// TestContainerWarmNode checks node runs served by warm containers.
func TestContainerWarmNode(t *testing.T) {
	testWarmSemantics(t, newTestContainer(t, PoolOptions{Size: 1}, "node"), WarmNode, t.TempDir(), "/workspace", 65534)
}
