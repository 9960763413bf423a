package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// TestKill9EndsRunsWithoutRestart kills the server with SIGKILL while every
// kind of work is in flight — a one-shot python run with a setsid'd double
// fork, a bash run with a background child, a busy session (likewise), a
// background run, a shell command, a package install, and idle warm runners
// — and starts no other server: within 5 s nothing the server started may
// run any more (no process of its process tree, no marked process, no
// container of its). In the sandbox mode under test.
func TestKill9EndsRunsWithoutRestart(t *testing.T) {
	mode := os.Getenv("CODEXEC_TEST_SANDBOX_MODE")
	if mode == "" || mode == "auto" {
		mode = "subprocess" // what auto picks where namespace mode cannot run
		if _, err := exec.LookPath("bwrap"); err == nil && os.Geteuid() == 0 {
			mode = "namespace"
		}
	}
	env := append(modeEnv(t, mode), "CODEXEC_DATA_DIR="+t.TempDir(), "CODEXEC_NPM_REGISTRY="+silentRegistry(t), "ALLOWED_COMMANDS=sleep")
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("the package install needs npm: " + err.Error())
	}
	s := start(t, env...)
	pid := s.Cmd.Process.Pid
	old := instance.Of(pid)
	marks := map[string]string{}
	for _, what := range []string{"run daemon", "session daemon", "bash child", "bash run", "background run", "command"} {
		marks[what] = fmt.Sprintf("300.%09d", rand.IntN(1e9))
	}
	pkg := fmt.Sprintf("codexec-never-%09d", rand.IntN(1e9))
	sess := s.startSession("python")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := []*mcp.CallToolParams{
		{Name: "execute_code", Arguments: map[string]any{"language": "python", "code": daemonCode(marks["run daemon"]), "timeout_ms": 120000}},
		{Name: "execute_code", Arguments: map[string]any{"language": "bash", "timeout_ms": 120000,
			"code": "sh -c 'sleep " + marks["bash child"] + "' & sleep " + marks["bash run"]}},
		{Name: "send_to_session", Arguments: map[string]any{"session_id": sess.SessionID, "code": daemonCode(marks["session daemon"]), "timeout_ms": 120000}},
		{Name: "execute_command", Arguments: map[string]any{"command": "sleep " + marks["command"], "timeout_ms": 120000}},
		{Name: "install_package", Arguments: map[string]any{"language": "node", "package": pkg}},
	}
	done := make(chan struct{}, len(calls))
	for _, c := range calls {
		go func() {
			_, _ = s.Session.CallTool(ctx, c)
			done <- struct{}{}
		}()
	}
	startBackground(t, s.Session, "execute_code", map[string]any{"language": "bash", "code": "sleep " + marks["background run"], "timeout_ms": 120000})
	for what, mark := range marks {
		waitFor(t, 60*time.Second, what+" to start", func() bool { return len(sleepers(mark)) > 0 })
	}
	waitFor(t, 60*time.Second, "the install to start", func() bool { return len(processesWith(pkg)) > 0 })
	tree := descendants(pid)
	ids := containerIDs(mode, old)
	t.Logf("before the kill: %d processes in the server's tree, %d containers", len(tree), len(ids))

	if err := s.Cmd.Process.Kill(); err != nil { // SIGKILL of the server we started
		t.Fatal(err)
	}
	killed := time.Now()
	cancel()
	for range calls {
		<-done
	}
	// The client's close waits for the watchdog, which holds the server's
	// stderr until it is done: watch meanwhile.
	closed := make(chan struct{})
	go func() { _ = s.Session.Close(); close(closed) }() // reaps the killed process
	var left string
	for {
		left = runsLeft(mode, old, marks, pkg, tree, ids, false)
		if left == "nothing" || time.Since(killed) > 5*time.Second {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left != "nothing" {
		t.Fatalf("5 s after the kill, with no server started since, the killed server's runs left: %s", left)
	}
	t.Logf("every run of the killed server ended %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	select {
	case <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("the killed server's stderr still open 60 s after the kill")
	}
	t.Logf("the watchdog was done %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	for _, l := range strings.Split(s.Stderr.String(), "\n") {
		if strings.Contains(l, "watchdog") {
			t.Log(l)
		}
	}
	if left := runsLeft(mode, old, marks, pkg, tree, ids, true); left != "nothing" {
		t.Errorf("once the watchdog was done, the killed server left: %s", left)
	}
	// The next start removes the rest (the workspaces' bounded disks).
	_ = start(t, env...)
}

// silentRegistry is a loopback npm registry that accepts connections and
// never answers: an install against it stays in flight.
func silentRegistry(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			_ = c.Close()
		}
	})
	return "http://" + l.Addr().String() + "/"
}

// runsLeft describes what of the killed server old still runs: processes
// with a mark (or the package name) in their command line, processes
// marked as its subprocess runs, processes of its process tree before the
// kill but its watchdog, host processes of its containers ids (conmon,
// which lives as long as its container runs); with done, its watchdog and
// any container of its the engine still lists (the engine's list waits on
// the removals in progress, so it is read once they are over); "nothing"
// when none.
func runsLeft(mode, old string, marks map[string]string, pkg string, tree map[int]string, ids []string, done bool) string {
	left := markedLeft(old, marks)
	if p := processesWith(pkg); len(p) > 0 {
		left = append(left, fmt.Sprintf("the package install (pids %v)", p))
	}
	var alive []string
	for p, st := range tree {
		cur, state := startAndState(p)
		// The watchdog is no run: it ends once it has ended them.
		watchdog := strings.Contains(cmdline(p), helper.WatchdogCommand)
		if cur == st && state != 'Z' && state != 0 && (done || !watchdog) {
			alive = append(alive, strconv.Itoa(p)+" "+cmdline(p))
		}
	}
	if len(alive) > 0 {
		left = append(left, fmt.Sprintf("processes of its tree %q", alive))
	}
	for _, id := range ids {
		if p := processesWith(id); len(p) > 0 {
			left = append(left, fmt.Sprintf("processes of container %.12s (pids %v)", id, p))
		}
	}
	if done && mode == "docker" {
		if names := containerIDs(mode, old); len(names) > 0 {
			left = append(left, fmt.Sprintf("containers %v", names))
		}
	}
	if len(left) == 0 {
		return "nothing"
	}
	return strings.Join(left, "; ")
}

// containerIDs lists the full ids of the containers, running or not,
// labelled as the server old's (none outside docker mode).
func containerIDs(mode, old string) []string {
	if mode != "docker" {
		return nil
	}
	cli := "docker"
	if exec.Command("docker", "info").Run() != nil {
		cli = "podman"
	}
	out, _ := exec.Command(cli, "ps", "-a", "--no-trunc", "--filter", "label=codexec.instance="+old, "--format", "{{.ID}}").Output()
	return strings.Fields(string(out))
}

// descendants maps every process below pid to its start time.
func descendants(pid int) map[int]string {
	out := map[int]string{}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(p) + "/task/*/children")
		for _, f := range tasks {
			b, _ := os.ReadFile(f)
			for _, c := range strings.Fields(string(b)) {
				child, err := strconv.Atoi(c)
				if err != nil || out[child] != "" {
					continue
				}
				st, _ := startAndState(child)
				out[child] = st
				queue = append(queue, child)
			}
		}
	}
	return out
}

// startAndState reads a process's start time (field 22 of its stat) and
// state; "", 0 if it is gone.
func startAndState(pid int) (string, byte) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return "", 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 20 {
		return "", 0
	}
	return f[19], f[0][0]
}

// cmdline is a process's command line, spaces between arguments.
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
