package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// TestKill9LeavesNothing kills the server with SIGKILL while a one-shot
// run (with a setsid double-forked daemon) and a busy session (likewise)
// are in flight, starts a new server on the same data directory, and checks
// that one second later nothing of the killed server runs, the log has the
// runs as lost and the session as ended (server_restart), and its
// directories and temporary files are gone. In every sandbox mode the host
// supports.
func TestKill9LeavesNothing(t *testing.T) {
	sameInEveryMode(t, "pins its sandbox modes")
	for _, mode := range []string{"subprocess", "namespace", "docker"} {
		t.Run(mode, func(t *testing.T) {
			testKill9(t, mode, modeEnv(t, mode))
		})
	}
}

// modeEnv is the server environment that pins sandbox mode (subprocess,
// namespace or docker), or skips t with the reason where the host cannot
// run it.
func modeEnv(t *testing.T, mode string) []string {
	env := []string{"CODEXEC_SANDBOX_MODE=" + mode}
	switch mode {
	case "namespace":
		if os.Geteuid() != 0 {
			t.Skip("namespace mode needs root")
		}
		if _, err := exec.LookPath("bwrap"); err != nil {
			t.Skip("namespace mode needs bubblewrap: " + err.Error())
		}
	case "docker":
		denv, why := dockerTestEnv(t, "node")
		if why != "" {
			t.Skip(why)
		}
		env = append(env, denv...)
	}
	return env
}

// daemonCode is python that leaves a setsid double-forked `sleep mark`
// behind and then sleeps itself.
func daemonCode(mark string) string {
	return fmt.Sprintf(`import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", %q])
    os._exit(0)
time.sleep(300)
`, mark)
}

func testKill9(t *testing.T, mode string, env []string) {
	data := t.TempDir()
	env = append(env, "CODEXEC_DATA_DIR="+data)
	s := start(t, env...)
	pid := s.Cmd.Process.Pid
	old := instance.Of(pid)
	marks := map[string]string{}
	for _, what := range []string{"run daemon", "session daemon", "bash daemon", "bash run"} {
		marks[what] = fmt.Sprintf("300.%09d", rand.IntN(1e9))
	}
	setsid := "setsid "
	if mode == "docker" {
		setsid = "" // the test image has no setsid; the container holds it anyway
	}
	sess := s.startSession("python")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := []*mcp.CallToolParams{
		{Name: "execute_code", Arguments: map[string]any{"language": "python", "code": daemonCode(marks["run daemon"]), "timeout_ms": 120000}},
		{Name: "execute_code", Arguments: map[string]any{"language": "bash", "timeout_ms": 120000,
			"code": setsid + "sh -c 'sleep " + marks["bash daemon"] + "' & sleep " + marks["bash run"]}},
		{Name: "send_to_session", Arguments: map[string]any{"session_id": sess.SessionID, "code": daemonCode(marks["session daemon"]), "timeout_ms": 120000}},
	}
	done := make(chan struct{}, len(calls))
	for _, c := range calls {
		go func() {
			_, _ = s.Session.CallTool(ctx, c)
			done <- struct{}{}
		}()
	}
	for what, mark := range marks {
		waitFor(t, 60*time.Second, what+" to start", func() bool { return len(sleepers(mark)) > 0 })
	}
	// As a kill in the middle of a script save leaves it.
	scriptsTmp := filepath.Join(data, "scripts", "demo", ".tmp-script.py-12345")
	if err := os.MkdirAll(filepath.Dir(scriptsTmp), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, scriptsTmp, "half a script")

	if err := s.Cmd.Process.Kill(); err != nil { // SIGKILL of the server we started
		t.Fatal(err)
	}
	cancel()
	for range calls {
		<-done
	}
	_ = s.Session.Close() // reaps the killed process
	time.Sleep(time.Second)
	t.Logf("1 s after the kill, before a restart: %s", leftOf(mode, old, pid, marks))
	if dirs, _ := cgroup.ServerDirs(cgroup.Detect(), old); mode == "namespace" && cgroup.Detect().Usable() && len(dirs) == 0 {
		t.Errorf("the killed server left no cgroup directory: the check after the restart proves nothing")
	}

	s2 := start(t, env...)
	time.Sleep(time.Second)
	if left := leftOf(mode, old, pid, marks); left != "nothing" {
		t.Errorf("1 s after the next start, the killed server left: %s", left)
	}

	var lost logSearchOut
	s2.callInto("search_execution_logs", map[string]any{"status": "lost"}, &lost)
	var sessionLost, oneShotLost int
	for _, h := range lost.Results {
		var lg lostOut
		s2.callInto("get_execution_log", map[string]any{"execution_id": h.ExecutionID}, &lg)
		if lg.Status != "lost" || lg.ExitCode != nil {
			t.Errorf("lost run %s: %+v", h.ExecutionID, lg)
		}
		if lg.SessionID != nil && *lg.SessionID == sess.SessionID {
			sessionLost++
			continue
		}
		oneShotLost++
		if lg.WorkingDir == "" {
			t.Errorf("lost run %s has no working_dir", h.ExecutionID)
		} else if _, err := os.Stat(lg.WorkingDir); !os.IsNotExist(err) {
			t.Errorf("workspace %s of the lost run %s left: %v", lg.WorkingDir, h.ExecutionID, err)
		}
	}
	if oneShotLost != 2 || sessionLost != 1 || lost.TotalCount != 3 {
		t.Errorf("search status=lost: %d one-shot and %d session runs of %d, want 2 and 1 of 3: %+v", oneShotLost, sessionLost, lost.TotalCount, lost.Results)
	}
	b, _ := os.ReadFile(filepath.Join(data, "logs", "session-"+sess.SessionID+".jsonl"))
	if !strings.Contains(string(b), `"type":"session_end"`) || !strings.Contains(string(b), `"reason":"server_restart"`) {
		t.Errorf("no session_end with reason server_restart:\n%s", b)
	}
	for _, p := range []string{filepath.Join(data, "sandbox", sess.SessionID), filepath.Join(data, "sandbox", ".packages", sess.SessionID),
		scriptsTmp, filepath.Join(data, "logs", "inflight", old+".journal")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}

// lostOut is what this file reads of get_execution_log.
type lostOut struct {
	SessionID  *string `json:"session_id"`
	Status     string  `json:"status"`
	ExitCode   *int    `json:"exit_code"`
	WorkingDir string  `json:"working_dir"`
}

// leftOf describes what of the server old (pid) still runs or exists:
// processes with a mark in their command line, processes marked as its
// subprocess runs, its labelled containers, its cgroups and staging root;
// "nothing" when none.
func leftOf(mode, old string, pid int, marks map[string]string) string {
	left := markedLeft(old, marks)
	if ids := containerIDs(mode, old); len(ids) > 0 {
		left = append(left, fmt.Sprintf("containers %.12q", ids))
	}
	suffix := "-" + strconv.Itoa(pid)
	if dirs, _ := cgroup.ServerDirs(cgroup.Detect(), old); len(dirs) > 0 {
		left = append(left, fmt.Sprintf("cgroups %v", dirs))
	}
	if _, err := os.Stat("/run/codexec" + suffix); err == nil {
		left = append(left, "staging root /run/codexec"+suffix)
	}
	if len(left) == 0 {
		return "nothing"
	}
	return strings.Join(left, "; ")
}

// markedLeft lists the processes still running of the server old: those
// with a mark (by what it marks) in their command line and those marked as
// its subprocess runs.
func markedLeft(old string, marks map[string]string) []string {
	var left []string
	for what, mark := range marks {
		if p := processesWith(mark); len(p) > 0 {
			left = append(left, fmt.Sprintf("%s (pids %v)", what, p))
		}
	}
	if p := processesMarkedBy(old); len(p) > 0 {
		left = append(left, fmt.Sprintf("processes of its subprocess runs %v", p))
	}
	return left
}

// sleepers lists the pids of `sleep mark` processes (not of processes that
// merely have mark in their arguments, such as a container CLI).
func sleepers(mark string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err == nil && filepath.Base(strings.SplitN(string(b), "\x00", 2)[0]) == "sleep" && strings.Contains(string(b), "\x00"+mark+"\x00") {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// processesMarkedBy lists the pids whose environment marks them as
// processes of a subprocess run of the server old.
func processesMarkedBy(old string) []string {
	var pids []string
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "environ"))
		if err == nil && strings.Contains(string(b), "CODEXEC_RUN="+old+"/") {
			pids = append(pids, filepath.Base(d))
		}
	}
	return pids
}

// watchdogOf returns the pid of the watchdog the server pid started.
func watchdogOf(t *testing.T, pid int) int {
	t.Helper()
	for p := range descendants(pid) {
		if strings.Contains(cmdline(p), helper.WatchdogCommand) {
			return p
		}
	}
	t.Fatalf("server %d has no watchdog", pid)
	return 0
}

// TestKill9DockerDeadline kills the server in docker mode, and its
// watchdog with it (as the OOM killer or a kill of the whole group could),
// while a warm and a cold run are in flight and starts no other: with no
// one left to remove them, the runs' containers must end by themselves at
// the runs' deadlines (timeout + kill grace + 2 s), and the idle warm
// containers at once. (With the watchdog alive they end within seconds:
// TestKill9EndsRunsWithoutRestart.)
func TestKill9DockerDeadline(t *testing.T) {
	sameInEveryMode(t, "pins its sandbox modes")
	denv, why := dockerTestEnv(t, "node")
	if why != "" {
		t.Skip(why)
	}
	env := append(denv, "CODEXEC_SANDBOX_MODE=docker", "CODEXEC_KILL_GRACE_MS=1000", "CODEXEC_DATA_DIR="+t.TempDir())
	s := start(t, env...)
	old := instance.Of(s.Cmd.Process.Pid)
	warmMark, coldMark := fmt.Sprintf("300.%09d", rand.IntN(1e9)), fmt.Sprintf("300.%09d", rand.IntN(1e9))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := []*mcp.CallToolParams{
		{Name: "execute_code", Arguments: map[string]any{"language": "python", "code": daemonCode(warmMark), "timeout_ms": 15000}},
		{Name: "execute_code", Arguments: map[string]any{"language": "bash", "code": "sh -c 'sleep " + coldMark + "' & sleep " + coldMark, "timeout_ms": 15000}},
	}
	done := make(chan struct{}, len(calls))
	for _, c := range calls {
		go func() {
			_, _ = s.Session.CallTool(ctx, c)
			done <- struct{}{}
		}()
	}
	for _, mark := range []string{warmMark, coldMark} {
		waitFor(t, 60*time.Second, "the runs to start", func() bool { return len(sleepers(mark)) > 0 })
	}
	watchdog := watchdogOf(t, s.Cmd.Process.Pid)
	if err := syscall.Kill(watchdog, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := s.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	cancel()
	for range calls {
		<-done
	}
	_ = s.Session.Close()
	cli := "docker"
	if exec.Command("docker", "info").Run() != nil {
		cli = "podman"
	}
	containers := func() []string {
		out, _ := exec.Command(cli, "ps", "--filter", "label=codexec.instance="+old, "--format", "{{.Names}}").Output()
		return strings.Fields(string(out))
	}
	t.Logf("running after the kill: %v", containers())
	// 15 s + 1 s + 2 s after each container started, plus engine latency.
	waitFor(t, 60*time.Second, "the killed server's containers to end", func() bool {
		return len(containers()) == 0 && len(sleepers(warmMark)) == 0 && len(sleepers(coldMark)) == 0
	})
	t.Logf("all ended %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	// The next start removes the rest (the workspaces' bounded disks).
	_ = start(t, env...)
}
