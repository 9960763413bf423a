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
	c, err := NewContainer(context.Background(), ContainerOptions{CLI: cli, Image: image, Pool: pool})
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestContainerWarm checks that runs served by warm containers keep the
// semantics of cold ones (testWarmSemantics).
func TestContainerWarm(t *testing.T) {
	testWarmSemantics(t, newTestContainer(t, PoolOptions{Size: 1}), t.TempDir(), "/workspace", 65534)
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
	c := newTestContainer(t, PoolOptions{Size: 1}, "node")
	dir := t.TempDir()
	cases := []struct {
		name, code, stdin string
		want              runResult
	}{
		{name: "output", code: "console.log('out'); console.error('err')", want: runResult{stdout: "out\n", stderr: "err\n"}},
		{name: "exit status", code: "process.exitCode = 3", want: runResult{exit: Exit{Code: 3}}},
		{name: "process.exit", code: "console.log('a'); process.exit(5)", want: runResult{stdout: "a\n", exit: Exit{Code: 5}}},
		{name: "stdin", code: "console.log(require('fs').readFileSync(0, 'utf8').toUpperCase())", stdin: "abc", want: runResult{stdout: "ABC\n"}},
		{name: "workspace, cwd, home, user", code: "require('fs').writeFileSync('made', 'x'); console.log(process.cwd(), process.env.HOME, process.getuid(), require('fs').readdirSync('.').join())",
			want: runResult{stdout: "/workspace /workspace 65534 made\n"}},
		{name: "late output", code: "setTimeout(() => console.log('later'), 100)", want: runResult{stdout: "later\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.Prewarm(warmSpec(WarmNode, dir, ""))
			if _, ok := c.AwaitWarm(WarmNode, 20*time.Second); !ok {
				t.Fatal("no warm container became ready")
			}
			hits := poolHits(c)
			spec := warmSpec(WarmNode, dir, tc.code)
			spec.Env = append(spec.Env, "HOME="+dir)
			if tc.stdin != "" {
				spec.Stdin = strings.NewReader(tc.stdin)
			}
			if got := runSpec(t, c, spec); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if poolHits(c) != hits+1 {
				t.Errorf("the run was not served warm")
			}
		})
	}
	t.Run("uncaught error", func(t *testing.T) {
		c.AwaitWarm(WarmNode, 20*time.Second)
		got := runSpec(t, c, warmSpec(WarmNode, dir, "throw new Error('boom')"))
		if got.exit.Code != 1 || !strings.Contains(got.stderr, "Error: boom") {
			t.Errorf("got %+v", got)
		}
	})
}
