package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// newTestContainer returns a container backend on the local test image
// (scripts/sandbox-test-image.sh; podman when docker has no engine), or
// skips.
func newTestContainer(t *testing.T, pool PoolOptions) *Container {
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
	const image = "codexec-test-sandbox"
	if out, err := exec.Command("bash", "../../scripts/sandbox-test-image.sh", cli, image).CombinedOutput(); err != nil {
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
// semantics of cold ones: output, exit status, stdin, arguments, the
// workspace, environment, and kills.
func TestContainerWarm(t *testing.T) {
	c := newTestContainer(t, PoolOptions{Size: 1})
	dir := t.TempDir()
	cases := []struct {
		name, code, stdin string
		args              []string
		want              runResult
	}{
		{name: "output", code: "import sys; print('out'); print('err', file=sys.stderr)",
			want: runResult{stdout: "out\n", stderr: "err\n"}},
		{name: "exit status", code: "import sys; sys.exit(3)", want: runResult{exit: Exit{Code: 3}}},
		{name: "exit status above 128", code: "import sys; sys.exit(137)", want: runResult{exit: Exit{Code: 137}}},
		{name: "os._exit", code: "import os, sys; sys.stdout.flush(); os._exit(7)", want: runResult{exit: Exit{Code: 7}}},
		{name: "stdin", code: "import sys; print(sys.stdin.read().upper())", stdin: "abc",
			want: runResult{stdout: "ABC\n"}},
		{name: "no stdin", code: "import sys; print(repr(sys.stdin.read()))", want: runResult{stdout: "''\n"}},
		{name: "arguments", code: "import sys; print(sys.argv[1:])", args: []string{"a", dir + "/f"},
			want: runResult{stdout: "['a', '/workspace/f']\n"}},
		{name: "workspace, cwd, home, user", code: "import os; open('made', 'w').write('x'); print(os.getcwd(), os.environ['HOME'], os.getuid(), 'PATH' in os.environ)",
			want: runResult{stdout: "/workspace /workspace 65534 True\n"}},
		{name: "no control socket left", code: "import os; print(sorted(os.listdir('.')), sorted(os.listdir('/proc/self/fd')))",
			want: runResult{stdout: "['made'] ['0', '1', '1023', '2', '3']\n"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.Prewarm(warmSpec(WarmPython, dir, ""))
			if _, ok := c.AwaitWarm(WarmPython, 20*time.Second); !ok {
				t.Fatal("no warm container became ready")
			}
			hits := containerHits(c)
			spec := warmSpec(WarmPython, dir, tc.code, tc.args...)
			spec.Env = append(spec.Env, "HOME="+dir)
			if tc.stdin != "" {
				spec.Stdin = strings.NewReader(tc.stdin)
			}
			got := runSpec(t, c, spec)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if containerHits(c) != hits+1 {
				t.Errorf("the run was not served warm")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("file written in the workspace: %v", err)
	}
	t.Run("kill", func(t *testing.T) { testContainerWarmKill(t, c, dir) })
}

func testContainerWarmKill(t *testing.T, c *Container, dir string) {
	c.AwaitWarm(WarmPython, 20*time.Second)
	p, err := c.Start(context.Background(), warmSpec(WarmPython, dir, "import time; time.sleep(60)"))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	_ = p.Kill()
	ex, err := p.Wait()
	if err != nil || ex.Signal != 9 || ex.OOMKilled {
		t.Errorf("killed run: %+v %v", ex, err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("kill took %v", d)
	}
	_ = p.Release(time.Second)
}

func containerHits(c *Container) uint64 {
	var n uint64
	for _, s := range c.PoolStats() {
		n += s.Hits
	}
	return n
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
	warm := containerHits(c)
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
