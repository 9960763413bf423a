package e2e

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostileEnv keeps every bomb small: the machine is shared.
var hostileEnv = []string{
	"CODEXEC_MEMORY_LIMIT=128m", "CODEXEC_PIDS_LIMIT=64", "CODEXEC_DISK_LIMIT=32m",
	"CODEXEC_KILL_GRACE_MS=500", "HOSTILE_MARKER=server-secret-7f3a",
}

// modeAvailable runs `codexec doctor` for mode and returns why it cannot
// run here ("" when it can); in rootless mode as the test account, who
// runs the servers.
func modeAvailable(t testing.TB, mode string, env ...string) string {
	t.Helper()
	if rootlessMode() {
		out, err := rootlessAccount(t).doctor(t, append([]string{"CODEXEC_SANDBOX_MODE=" + mode}, env...)...)
		if err != nil {
			return strings.TrimSpace(out)
		}
		return ""
	}
	cmd := exec.Command(binary(t), "doctor")
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"CODEXEC_DATA_DIR=" + t.TempDir(), "CODEXEC_SANDBOX_MODE=" + mode}, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return strings.TrimSpace(string(out))
	}
	return ""
}

// hostileCase is one attack. check inspects the result; isolatedOnly cases
// are unsafe or pointless without isolation (subprocess mode would really
// fork-bomb, exhaust memory or kill the machine's processes).
type hostileCase struct {
	name         string
	isolatedOnly bool
	// rootOnly, when set, is what enforces the limit the case checks:
	// the rootless pass skips it where the server lacks that (skipWithout).
	rootOnly *rootOnlyLimit
	args     func(h *hostileFixture) map[string]any
	check    func(t *testing.T, h *hostileFixture, r execResult)
}

// hostileFixture is host state the attacks target.
type hostileFixture struct {
	secretFile  string // a host file outside every workspace
	outsideDir  string // a host dir outside every workspace
	workDir     string // working_dir for cases that need one
	port        int
	accepted    *atomic.Int64
	serverPid   int
	sentinelPid int
	disks       string // the server's bounded disks (CODEXEC_SANDBOX_DIR/.disks)
	mode        string
}

func TestHostile(t *testing.T) {
	pinsNamespaceMode(t, "pins its sandbox modes")
	for _, m := range withForkVariant(sandboxModes(t)) {
		t.Run(m.label(), func(t *testing.T) {
			if why := modeAvailable(t, m.name, m.env...); why != "" {
				t.Skipf("%s mode unavailable on this host:\n%s", m.name, why)
			}
			runHostile(t, m.name, m.env)
		})
	}
}

// withForkVariant marks namespace mode's python runs as forked from a
// zygote (the default) and adds the mode with whole-interpreter runners
// (CODEXEC_POOL_FORK=off) after it.
func withForkVariant(modes []sandboxMode) []sandboxMode {
	var out []sandboxMode
	for _, m := range modes {
		if m.name != "namespace" {
			out = append(out, m)
			continue
		}
		m.fork = true
		out = append(out, m, sandboxMode{name: m.name, env: append(append([]string{}, m.env...), "CODEXEC_POOL_FORK=off"), variant: "nofork"})
	}
	return out
}

type sandboxMode struct {
	name string
	env  []string
	// fork: python runs are forked from a zygote.
	fork bool
	// variant tells a mode's settings apart in test names.
	variant string
}

// label names the mode in test names.
func (m sandboxMode) label() string {
	if m.variant != "" {
		return m.name + "-" + m.variant
	}
	return m.name
}

// sandboxModes lists the modes to test. Docker mode uses the local test
// image with python and node (dockerTestEnv). In rootless mode only
// namespace mode, run by the test account: the subprocess and docker
// passes cover the others, and rootless docker is a different engine set-up.
func sandboxModes(t *testing.T) []sandboxMode {
	if rootlessMode() {
		t.Log("rootless pass: namespace mode only, run by the test account " + rootlessAccountName)
		return []sandboxMode{{name: "namespace"}}
	}
	env, why := dockerTestEnv(t, "node")
	if why != "" {
		t.Log(why)
	}
	return []sandboxMode{
		{name: "subprocess"},
		{name: "namespace"},
		{name: "docker", env: env},
	}
}

func runHostile(t *testing.T, mode string, env []string) {
	// The working_dir cases need a directory sandboxed code may write: an
	// operator's writable root that the sandbox user may write by its own
	// permissions.
	ownerUID, ownerGID := sandboxOwner(t)
	workDir := t.TempDir()
	if err := os.Chown(workDir, ownerUID, ownerGID); err != nil {
		t.Fatal(err)
	}
	env = append(append([]string{"CODEXEC_SANDBOX_MODE=" + mode, "CODEXEC_WRITABLE_ROOTS=" + workDir}, hostileEnv...), env...)
	s := start(t, env...)
	h := newFixture(t, s, workDir)
	h.mode = mode
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.isolatedOnly && mode == "subprocess" {
				t.Skip("subprocess mode does not confine this (SECURITY.md); running it would be unsafe or only show the documented gap")
			}
			if c.rootOnly != nil {
				skipWithout(t, *c.rootOnly, c.name)
			}
			r, res := s.exec(c.args(h))
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			c.check(t, h, r)
			after, _ := s.exec(map[string]any{"language": "python", "code": "print(1)"})
			if after.Stdout != "1\n" {
				t.Fatalf("server did not answer the next call properly: %+v", after)
			}
		})
	}
	if err := syscall.Kill(h.sentinelPid, 0); err != nil {
		t.Errorf("sentinel process outside the sandbox died: %v", err)
	}
}

func newFixture(t *testing.T, s *server, workDir string) *hostileFixture {
	dir := t.TempDir()
	h := &hostileFixture{secretFile: filepath.Join(dir, "secret.txt"), outsideDir: dir, workDir: workDir,
		accepted: &atomic.Int64{}, serverPid: s.Cmd.Process.Pid, disks: filepath.Join(s.DataDir, "sandbox", ".disks")}
	if err := os.WriteFile(h.secretFile, []byte("host-secret-91c2"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	h.port = ln.Addr().(*net.TCPAddr).Port
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			_, _ = c.Write([]byte("hello-from-host\n"))
			_ = c.Close()
		}
	}()
	sentinel := exec.Command("sleep", "600")
	if err := sentinel.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sentinel.Process.Kill(); _ = sentinel.Wait() })
	h.sentinelPid = sentinel.Process.Pid
	return h
}

func limitBy(l rootOnlyLimit) *rootOnlyLimit { return &l }

func py(code string) func(*hostileFixture) map[string]any {
	return func(*hostileFixture) map[string]any {
		return map[string]any{"language": "python", "code": code, "timeout": 10}
	}
}

func notSuccess(t *testing.T, r execResult) {
	t.Helper()
	if r.Status == "success" {
		t.Fatalf("attack succeeded: %+v", r)
	}
}

func hostileCases() []hostileCase {
	return []hostileCase{
		{name: "fork_bomb", isolatedOnly: true,
			args: func(*hostileFixture) map[string]any {
				return map[string]any{"language": "python", "timeout": 3,
					"code": "import os\nn=0\nwhile True:\n    try:\n        os.fork(); n+=1\n    except OSError:\n        pass"}
			},
			check: func(t *testing.T, _ *hostileFixture, r execResult) { notSuccess(t, r) }},
		{name: "memory_bomb", isolatedOnly: true, rootOnly: limitBy(byCgroup), // the OOM kill and its report
			args: py("a=[]\nwhile True:\n    a.append(bytearray(8<<20))"),
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				notSuccess(t, r)
				if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "memory limit 128 MiB exceeded") {
					t.Fatalf("OOM not reported plainly: %+v", r)
				}
			}},
		{name: "disk_fill_tmp", isolatedOnly: true,
			args: py("f=open('/tmp/fill','wb')\nfor _ in range(1024):\n    f.write(b'x'*(1<<20))\nf.flush()"),
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				notSuccess(t, r)
				// Without root, a file size limit as large as /tmp holds
				// each file too: the one file stops there first.
				perFile := rootlessMode() && strings.Contains(r.Stderr, "File too large")
				if !strings.Contains(r.Stderr, "No space left") && !perFile {
					t.Fatalf("want ENOSPC from the size-limited /tmp: %+v", r)
				}
			}},
		{name: "disk_fill_workspace_2GB", rootOnly: limitBy(byBoundedDisk), args: py(write2GB),
			check: func(t *testing.T, h *hostileFixture, r execResult) {
				if h.mode == "subprocess" {
					checkFileSizeLimit(t, r, 32<<20)
					return
				}
				checkDiskFull(t, h, r, "written", 32<<20)
			}},
		{name: "inode_flood", isolatedOnly: true, rootOnly: limitBy(byBoundedDisk), args: py(inodeFlood),
			check: func(t *testing.T, h *hostileFixture, r execResult) { checkDiskFull(t, h, r, "files", 32<<20/8192) }},
		{name: "output_1GB",
			args: py("import sys\nb='x'*(1<<20)\nfor _ in range(1024):\n    sys.stdout.write(b)"),
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				if !r.Truncated || len(r.Stdout) > 20000 {
					t.Fatalf("output not bounded: truncated=%v len=%d status=%s", r.Truncated, len(r.Stdout), r.Status)
				}
			}},
		{name: "read_host_file", isolatedOnly: true,
			args: func(h *hostileFixture) map[string]any {
				return map[string]any{"language": "bash", "code": fmt.Sprintf("cat %s; cat /etc/shadow; ls /root", h.secretFile)}
			},
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				if strings.Contains(r.Stdout, "host-secret") || strings.Contains(r.Stdout, "root:") {
					t.Fatalf("host file leaked: %q", r.Stdout)
				}
			}},
		{name: "write_outside", isolatedOnly: true,
			args: func(h *hostileFixture) map[string]any {
				return map[string]any{"language": "bash", "code": fmt.Sprintf("echo pwned > %s/pwned; echo pwned > /usr/pwned; echo pwned > /pwned", h.outsideDir)}
			},
			check: func(t *testing.T, h *hostileFixture, r execResult) {
				for _, p := range []string{filepath.Join(h.outsideDir, "pwned"), "/usr/pwned", "/pwned"} {
					if _, err := os.Stat(p); err == nil {
						_ = os.Remove(p)
						t.Fatalf("wrote %s on the host", p)
					}
				}
			}},
		{name: "tcp_to_host_loopback", isolatedOnly: true,
			args: func(h *hostileFixture) map[string]any {
				return map[string]any{"language": "python", "timeout": 10, "code": fmt.Sprintf(
					"import socket\ns=socket.create_connection(('127.0.0.1',%d),timeout=2)\nprint(s.recv(100))", h.port)}
			},
			check: func(t *testing.T, h *hostileFixture, r execResult) {
				notSuccess(t, r)
				if h.accepted.Load() != 0 || strings.Contains(r.Stdout, "hello-from-host") {
					t.Fatalf("reached the host listener: %+v", r)
				}
			}},
		{name: "server_environ_and_proc", isolatedOnly: true,
			args: func(h *hostileFixture) map[string]any {
				return map[string]any{"language": "bash", "code": fmt.Sprintf(
					"cat /proc/%d/environ; echo; echo count=$(ls /proc | grep -c '^[0-9]')", h.serverPid)}
			},
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				if strings.Contains(r.Stdout, "server-secret") || strings.Contains(r.Stdout, "CODEXEC_") {
					t.Fatalf("server environment leaked: %q", r.Stdout)
				}
				_, count, _ := strings.Cut(r.Stdout, "count=")
				if n := strings.TrimSpace(count); n == "" || len(n) > 1 {
					t.Fatalf("sandbox sees more than a handful of processes: %q", r.Stdout)
				}
			}},
		{name: "kill_all", isolatedOnly: true,
			args: func(*hostileFixture) map[string]any {
				return map[string]any{"language": "bash", "code": "kill -9 -1; echo still-here"}
			},
			check: func(t *testing.T, _ *hostileFixture, r execResult) {}},
		{name: "setsid_double_fork_daemon",
			args: func(h *hostileFixture) map[string]any {
				return map[string]any{"language": "python", "working_dir": h.workDir, "code": "import os,time\n" +
					"if os.fork()==0:\n    os.setsid()\n    if os.fork()==0:\n" +
					"        while True:\n            open('daemon.txt','a').write('x'); time.sleep(0.05)\n    os._exit(0)\n" +
					"time.sleep(0.3)\nprint('parent done')"}
			},
			check: func(t *testing.T, h *hostileFixture, r execResult) {
				p := filepath.Join(h.workDir, "daemon.txt")
				time.Sleep(200 * time.Millisecond)
				before, _ := os.ReadFile(p)
				if len(before) == 0 {
					t.Fatalf("the daemon never wrote %s, so the case tested nothing: %+v", p, r)
				}
				time.Sleep(500 * time.Millisecond)
				after, _ := os.ReadFile(p)
				if len(after) != len(before) {
					t.Fatalf("daemon still running after the call returned (%d → %d bytes)", len(before), len(after))
				}
			}},
		{name: "ignore_sigterm_loop",
			args: func(*hostileFixture) map[string]any {
				return map[string]any{"language": "python", "timeout": 1,
					"code": "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: pass"}
			},
			check: func(t *testing.T, _ *hostileFixture, r execResult) {
				if !r.TimedOut || r.DurationMs > 5000 {
					t.Fatalf("want timeout then kill within the grace: %+v", r)
				}
			}},
	}
}
