package e2e

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// processUID is the real uid of a running process, from /proc.
func processUID(t testing.TB, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, err := strconv.Atoi(strings.Fields(rest)[0])
			if err != nil {
				t.Fatal(err)
			}
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

// TestRootlessHarness: startRootless runs the server as the test account,
// with a data directory it owns, in subprocess mode when asked (so the
// harness itself is checked on hosts whatever their namespace support).
func TestRootlessHarness(t *testing.T) {
	pinsNamespaceMode(t, "starts its server as the test account")
	a := rootlessAccount(t)
	s := startRootless(t, "CODEXEC_SANDBOX_MODE=subprocess")
	if uid := processUID(t, s.Cmd.Process.Pid); uid != a.UID {
		t.Errorf("server runs as uid %d, want the account's %d", uid, a.UID)
	}
	if owner := ownerOf(t, s.DataDir); owner != a.UID {
		t.Errorf("data dir %s owned by %d, want %d", s.DataDir, owner, a.UID)
	}
	r, res := s.exec(map[string]any{"language": "bash", "code": "id -u; echo $HOME"})
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	if want := fmt.Sprintf("%d\n", a.UID); !strings.HasPrefix(r.Stdout, want) {
		t.Errorf("subprocess run as %q, want uid %s", r.Stdout, want)
	}
}

// rootlessServer starts a namespace-mode server as the test account, or
// skips t with the reason this host cannot run one (no bubblewrap, user
// namespaces disabled, or the account's `codexec doctor` says so).
func rootlessServer(t *testing.T, env ...string) (*testAccount, *server) {
	t.Helper()
	pinsNamespaceMode(t, "starts its servers as the test account in namespace mode")
	a := rootlessAccount(t)
	skipUnlessRootless(t)
	s := startRootless(t, env...)
	if uid := processUID(t, s.Cmd.Process.Pid); uid != a.UID {
		t.Fatalf("server runs as uid %d, want the account's %d", uid, a.UID)
	}
	return a, s
}

// rootlessAttack is one program a rootless run must not succeed with: it
// prints reached when it got what it should not have.
type rootlessAttack struct {
	name    string
	args    map[string]any
	reached string
}

// attempt runs c and fails t when its output shows it got through.
func (c rootlessAttack) attempt(t *testing.T, s *server) execResult {
	t.Helper()
	r, res := s.exec(c.args)
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	t.Logf("%s: %s %s", r.Status, strings.TrimSpace(r.Stdout), strings.TrimSpace(tail(r.Stderr, 300)))
	if strings.Contains(r.Stdout, c.reached) || strings.Contains(r.Stderr, c.reached) {
		t.Errorf("the run got through: status %s\nstdout: %s\nstderr: %s", r.Status, r.Stdout, r.Stderr)
	}
	return r
}

func pyRun(code string) map[string]any {
	return map[string]any{"language": "python", "code": code, "timeout": 20}
}

func bashRun(code string) map[string]any {
	return map[string]any{"language": "bash", "code": code, "timeout": 20}
}

// homeSecret writes content to path below the account's home (parents
// 0700, the file 0600, all the account's, as ssh-keygen leaves a key) and
// removes the file at cleanup (the account stays).
func homeSecret(t *testing.T, a *testAccount, rel, content string) string {
	t.Helper()
	p := filepath.Join(a.Home, rel)
	for d := filepath.Dir(p); d != a.Home; d = filepath.Dir(d) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, a.UID, a.GID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(p, a.UID, a.GID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(p) })
	return p
}

// TestRootlessOwnSecrets: a run of a rootless server cannot read files of
// the account that runs it outside its workspace (an ssh key, another file
// in $HOME), though the server itself could; with the home as working_dir
// the key is still masked.
func TestRootlessOwnSecrets(t *testing.T) {
	a, s := rootlessServer(t)
	keyMark := fmt.Sprintf("ssh-key-secret-%09d", rand.IntN(1e9))
	noteMark := fmt.Sprintf("home-note-secret-%09d", rand.IntN(1e9))
	key := homeSecret(t, a, ".ssh/id_ed25519", keyMark+"\n")
	note := homeSecret(t, a, fmt.Sprintf("notes-%d.txt", os.Getpid()), noteMark+"\n")
	readBoth := func(lang string) map[string]any {
		if lang == "bash" {
			return bashRun(fmt.Sprintf("cat %s %s ~/.ssh/id_ed25519; ls -la ~ ~/.ssh", key, note))
		}
		return pyRun(fmt.Sprintf("import os\nfor p in [%q, %q, os.path.expanduser('~/.ssh/id_ed25519')]:\n"+
			"    try: print(open(p).read())\n    except OSError as e: print(p, e)\n", key, note))
	}
	inHome := pyRun(fmt.Sprintf("try: print(open(%q).read())\nexcept OSError as e: print(e)\n", key))
	inHome["working_dir"] = a.Home
	cases := []struct {
		name  string
		args  map[string]any
		marks []string
	}{
		{"python", readBoth("python"), []string{keyMark, noteMark}},
		{"bash", readBoth("bash"), []string{keyMark, noteMark}},
		{"node", map[string]any{"language": "node", "timeout": 20, "code": fmt.Sprintf(
			"const fs = require('fs'); for (const p of [%q, %q]) { try { console.log(fs.readFileSync(p, 'utf8')) } catch (e) { console.log(p, e.code) } }", key, note)},
			[]string{keyMark, noteMark}},
		{"home_as_working_dir", inHome, []string{keyMark}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, res := s.exec(c.args)
			if res.IsError {
				// A refused working_dir reads nothing either.
				t.Logf("refused: %s", text(res))
				return
			}
			for _, m := range c.marks {
				if strings.Contains(r.Stdout+r.Stderr, m) {
					t.Errorf("the run read the account's secret %s:\n%s%s", m, r.Stdout, r.Stderr)
				}
			}
		})
	}
}

// accountSleep starts `sleep` as the account (a unique duration marks it)
// and returns it with a channel closed when it ends; it is killed at
// cleanup.
func accountSleep(t *testing.T, a *testAccount) (*exec.Cmd, string, <-chan struct{}) {
	t.Helper()
	mark := fmt.Sprintf("300.%09d", rand.IntN(1e9))
	cmd := a.Command("sleep", mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	if uid := processUID(t, cmd.Process.Pid); uid != a.UID {
		t.Fatalf("sleep runs as %d, want %d", uid, a.UID)
	}
	return cmd, mark, done
}

// TestRootlessOwnProcesses: a run cannot see, signal or trace a process
// the account runs outside codexec (same uid on the host), and the process
// lives on.
func TestRootlessOwnProcesses(t *testing.T) {
	a, s := rootlessServer(t)
	sleep, mark, done := accountSleep(t, a)
	pid := sleep.Process.Pid
	pyTry := func(what string) map[string]any {
		return pyRun(fmt.Sprintf("import os, ctypes\npid = %d\ntry:\n    %s\n    print('REACHED')\nexcept Exception as e:\n    print('denied', repr(e))\n", pid, what))
	}
	cases := []rootlessAttack{
		{name: "signal_0", args: pyTry("os.kill(pid, 0)"), reached: "REACHED"},
		{name: "sigkill", args: pyTry("os.kill(pid, 9)"), reached: "REACHED"},
		{name: "proc_status", args: pyTry("print(open('/proc/%d/status' % pid).read())"), reached: "REACHED"},
		{name: "proc_environ", args: pyTry("print(open('/proc/%d/environ' % pid).read())"), reached: "REACHED"},
		{name: "ptrace_attach", args: pyTry("libc = ctypes.CDLL(None, use_errno=True)\n    " +
			"assert libc.ptrace(16, pid, 0, 0) == 0, os.strerror(ctypes.get_errno())"), reached: "REACHED"},
		{name: "find_in_proc", reached: "FOUND", args: pyRun(fmt.Sprintf("import os\nfor p in os.listdir('/proc'):\n"+
			"    try: c = open('/proc/%%s/cmdline' %% p, 'rb').read()\n    except OSError: continue\n"+
			"    if c.startswith(b'sleep\\x00%s'): print('FOUND', p)\nprint('scanned')\n", mark))},
		{name: "bash_kill", args: bashRun(fmt.Sprintf("kill -9 %d && echo REACHED", pid)), reached: "REACHED"},
		{name: "kill_everything", args: bashRun("kill -9 -1; echo survived"), reached: "REACHED"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.attempt(t, s)
			select {
			case <-done:
				t.Fatalf("the account's sleep %d outside codexec died", pid)
			default:
			}
		})
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Errorf("the account's sleep is gone: %v", err)
	}
}

// accountListener starts a TCP listener on 127.0.0.1 as the account and
// returns its port and a counter of the connections it accepted.
func accountListener(t *testing.T, a *testAccount) (int, *atomic.Int64) {
	t.Helper()
	cmd := a.Command("/usr/bin/python3", "-u", "-c", "import socket\ns = socket.socket()\ns.bind(('127.0.0.1', 0))\n"+
		"s.listen(8)\nprint(s.getsockname()[1])\nwhile True:\n    c, _ = s.accept()\n    print('ACCEPTED')\n    c.sendall(b'hello\\n')\n    c.close()\n")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if uid := processUID(t, cmd.Process.Pid); uid != a.UID {
		t.Fatalf("listener runs as %d, want %d", uid, a.UID)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("the listener printed no port")
	}
	port, err := strconv.Atoi(strings.TrimSpace(lines.Text()))
	if err != nil {
		t.Fatal(err)
	}
	accepted := &atomic.Int64{}
	go func() {
		for lines.Scan() {
			if lines.Text() == "ACCEPTED" {
				accepted.Add(1)
			}
		}
	}()
	return port, accepted
}

// TestRootlessLoopback: a run cannot reach a loopback TCP service of the
// account that runs codexec (the host's 127.0.0.1 is not the run's),
// whatever the language or name it uses.
func TestRootlessLoopback(t *testing.T) {
	a, s := rootlessServer(t)
	port, accepted := accountListener(t, a)
	// The listener answers the host (so a failure below is the sandbox's).
	if out, err := a.Command("/usr/bin/python3", "-c", fmt.Sprintf(
		"import socket; print(socket.create_connection(('127.0.0.1', %d), 5).recv(16))", port)).CombinedOutput(); err != nil || !strings.Contains(string(out), "hello") {
		t.Fatalf("the listener does not answer on the host: %v %s", err, out)
	}
	time.Sleep(100 * time.Millisecond)
	base := accepted.Load()
	pyConnect := func(host string) map[string]any {
		return pyRun(fmt.Sprintf("import socket\ntry:\n    c = socket.create_connection((%q, %d), 3)\n"+
			"    print('REACHED', c.recv(16))\nexcept OSError as e:\n    print('refused', e)\n", host, port))
	}
	cases := []rootlessAttack{
		{name: "python_ipv4", args: pyConnect("127.0.0.1"), reached: "REACHED"},
		{name: "python_localhost", args: pyConnect("localhost"), reached: "REACHED"},
		{name: "bash_dev_tcp", args: bashRun(fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && head -c5 <&3 && echo REACHED", port)), reached: "REACHED"},
		{name: "node", reached: "REACHED", args: map[string]any{"language": "node", "timeout": 20, "code": fmt.Sprintf(
			"const c = require('net').connect(%d, '127.0.0.1', () => { console.log('REACHED'); c.end() }); c.on('error', e => console.log('refused', e.code))", port)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.attempt(t, s)
		})
	}
	time.Sleep(100 * time.Millisecond)
	if n := accepted.Load() - base; n != 0 {
		t.Errorf("the account's loopback listener accepted %d connections from runs", n)
	}
}

// TestRootlessWritableRootOwner: a file a run writes into a writable root
// (working_dir below CODEXEC_WRITABLE_ROOTS; a session too) lands on the
// host owned by the account that runs codexec, not by a sandbox id.
func TestRootlessWritableRootOwner(t *testing.T) {
	pinsNamespaceMode(t, "starts its server as the test account in namespace mode")
	a := rootlessAccount(t)
	root := a.Dir(t)
	_, s := rootlessServer(t, "CODEXEC_WRITABLE_ROOTS="+root)
	cases := []struct {
		name string
		args map[string]any
	}{
		{"python", pyRun("open('py.txt', 'w').write('x'); import os; os.makedirs('sub/deep'); open('sub/deep/f', 'w').write('y'); print('wrote')")},
		{"bash", bashRun("echo x > bash.txt && echo wrote")},
		{"node", map[string]any{"language": "node", "code": "require('fs').writeFileSync('node.txt', 'x'); console.log('wrote')"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, c.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(dir, a.UID, a.GID); err != nil {
				t.Fatal(err)
			}
			c.args["working_dir"] = dir
			r, res := s.exec(c.args)
			if res.IsError || !strings.Contains(r.Stdout, "wrote") {
				t.Fatalf("write failed: %s %+v", text(res), r)
			}
			_ = filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
				if err != nil {
					t.Error(err)
					return nil
				}
				var st syscall.Stat_t
				if err := syscall.Lstat(p, &st); err != nil {
					t.Error(err)
				} else if int(st.Uid) != a.UID || int(st.Gid) != a.GID {
					t.Errorf("%s is owned by %d:%d on the host, want the account's %d:%d", p, st.Uid, st.Gid, a.UID, a.GID)
				}
				return nil
			})
		})
	}
}

// TestRootlessDoctor: `codexec doctor` run by the account says namespace
// mode is available and rootless, and claims no cgroup limit when none is
// delegated.
func TestRootlessDoctor(t *testing.T) {
	pinsNamespaceMode(t, "runs the doctor as the test account")
	a := rootlessAccount(t)
	skipUnlessRootless(t)
	out, err := a.doctor(t, "CODEXEC_SANDBOX_MODE=namespace")
	if err != nil {
		t.Fatalf("doctor as %s: %v\n%s", a.Name, err, out)
	}
	line := doctorLine(out, "namespace:")
	if !strings.HasPrefix(line, "namespace: available") || !(strings.Contains(line, "rootless") || strings.Contains(line, "without root")) {
		t.Errorf("doctor's namespace line %q, want it available and rootless\n%s", line, out)
	}
	if strings.Contains(line, "controllers:") {
		t.Errorf("doctor claims cgroup controllers with no cgroup delegated to %s: %q", a.Name, line)
	}
}

// rootlessLimitsEnv are small limits for TestRootlessLimits.
var rootlessLimitsEnv = []string{"CODEXEC_MEMORY_LIMIT=128m", "CODEXEC_PIDS_LIMIT=64", "CODEXEC_DISK_LIMIT=32m"}

// fillFiles is python that writes 1 MiB files into dir until an error (or
// 100 files) and prints how many and the errno.
func fillFiles(dir string) string {
	return fmt.Sprintf("import os\nn = 0\ntry:\n    while n < 100:\n        open(os.path.join(%q, 'f%%d' %% n), 'wb').write(b'x' * (1 << 20))\n"+
		"        n += 1\n    print('wrote all', n)\nexcept OSError as e:\n    print('stopped', n, e.errno)\n", dir)
}

// TestRootlessLimits: without a cgroup (none delegated, even in the pass
// that delegates one), a rootless server still stops a memory bomb, a fork
// bomb, a file larger than the disk limit and a /tmp or /dev/shm fill,
// with per-process limits and size-capped tmpfs, keeps answering, and no
// result claims a cgroup.
func TestRootlessLimits(t *testing.T) {
	_, s := rootlessServer(t, append([]string{"CODEXEC_CGROUP_PARENT="}, rootlessLimitsEnv...)...)
	cases := []struct {
		name  string
		code  string
		check func(t *testing.T, r execResult)
	}{
		{"memory_bomb", "a = []\nwhile True:\n    a.append(bytearray(8 << 20))", func(t *testing.T, r execResult) {
			if r.Status == "success" || r.TimedOut {
				t.Errorf("a memory bomb was not stopped by the memory limit: %+v", r)
			}
		}},
		{"fork_bomb", "import os, time\nn = 0\ntry:\n    while n < 1000:\n        if os.fork() == 0:\n            time.sleep(30)\n" +
			"            os._exit(0)\n        n += 1\n    print('forked all', n)\nexcept OSError as e:\n    print('stopped', n, e.errno)\n",
			func(t *testing.T, r execResult) {
				var n, errno int
				if _, err := fmt.Sscanf(r.Stdout, "stopped %d %d", &n, &errno); err != nil || n > 64 {
					t.Errorf("want fork to fail within the 64 processes limit: %+v", r)
				}
			}},
		{"file_size", "f = open('big', 'wb')\nn = 0\ntry:\n    while n < 64:\n        f.write(b'x' * (1 << 20)); f.flush(); n += 1\n" +
			"    print('wrote all')\nexcept OSError as e:\n    print('stopped', n, e.errno)\n",
			func(t *testing.T, r execResult) {
				var n, errno int
				if _, err := fmt.Sscanf(r.Stdout, "stopped %d %d", &n, &errno); err != nil || n > 32 || errno != int(syscall.EFBIG) && errno != int(syscall.ENOSPC) {
					t.Errorf("want a 64 MiB file stopped at the 32 MiB disk limit: %+v", r)
				}
			}},
		{"tmp_fill", fillFiles("/tmp"), func(t *testing.T, r execResult) { checkFilled(t, r) }},
		{"shm_fill", fillFiles("/dev/shm"), func(t *testing.T, r execResult) { checkFilled(t, r) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, res := s.exec(map[string]any{"language": "python", "code": c.code, "timeout": 20})
			if res.IsError {
				t.Fatalf("tool error: %s", text(res))
			}
			t.Logf("%s: %s %q limits %v", r.Status, strings.TrimSpace(r.Stdout), deref(r.ErrorMessage), r.Limits)
			c.check(t, r)
			for what, by := range r.Limits {
				if strings.Contains(by, "cgroup") {
					t.Errorf("the result says %s is limited by %q, but the server has no cgroup", what, by)
				}
			}
			if after, _ := s.exec(map[string]any{"language": "python", "code": "print(1)"}); after.Stdout != "1\n" {
				t.Fatalf("the server did not answer the next call: %+v", after)
			}
		})
	}
}

// checkFilled wants a fillFiles run stopped by a full file system within
// the 32 MiB limit.
func checkFilled(t *testing.T, r execResult) {
	t.Helper()
	var n, errno int
	if _, err := fmt.Sscanf(r.Stdout, "stopped %d %d", &n, &errno); err != nil || n > 32 || errno != int(syscall.ENOSPC) {
		t.Errorf("want ENOSPC within 32 MiB of 1 MiB files: %+v", r)
	}
}

// delegatedCgroupProcs counts the processes in the groups below the
// delegated cgroup (the memory hierarchy on v1, the one tree on v2; not
// the v2 leaf the servers themselves start in).
func delegatedCgroupProcs(t *testing.T, parent string) int {
	t.Helper()
	root := filepath.Join(cgroupRoot, "memory", parent)
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		root = filepath.Join(cgroupRoot, parent)
	}
	n := 0
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "cgroup.procs" || filepath.Dir(p) == root ||
			filepath.Base(filepath.Dir(p)) == delegatedV2Leaf {
			return nil
		}
		b, _ := os.ReadFile(p)
		n += len(strings.Fields(string(b)))
		return nil
	})
	return n
}

// TestRootlessDelegatedCgroup: with a cgroup delegated to the account
// (CODEXEC_CGROUP_PARENT), a rootless server places its runs in groups
// below it and a memory bomb is killed and reported as in root mode.
func TestRootlessDelegatedCgroup(t *testing.T) {
	if !rootlessCgroupWanted() {
		t.Skip("needs a cgroup delegated to the account: run with CODEXEC_TEST_ROOTLESS_CGROUP=1")
	}
	a, s := rootlessServer(t, "CODEXEC_MEMORY_LIMIT=128m")
	parent, err := delegatedCgroup(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range delegateDirs {
		if owner := ownerOf(t, d); owner != a.UID {
			t.Fatalf("delegated %s is owned by %d, want %d", d, owner, a.UID)
		}
	}
	t.Logf("delegated %v", delegateDirs)
	sess := s.startSession("python")
	defer s.call("close_session", map[string]any{"session_id": sess.SessionID})
	if n := delegatedCgroupProcs(t, parent); n == 0 {
		t.Errorf("no process of the server's runs is in a group below the delegated %s", parent)
	}
	r, _ := s.exec(map[string]any{"language": "python", "code": "a = []\nwhile True:\n    a.append(bytearray(8 << 20))", "timeout": 20})
	if r.Status == "success" || !strings.Contains(deref(r.ErrorMessage), "memory limit 128 MiB exceeded") {
		t.Errorf("memory bomb under a delegated cgroup: want the OOM kill reported, got %s %q", r.Status, deref(r.ErrorMessage))
	}
}
