package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"
)

// cmdYAML is the YAML text seed 002 requires in the content.
type cmdYAML struct {
	ExitCode    *int   `yaml:"exit_code"`
	Stdout      string `yaml:"stdout"`
	Stderr      string `yaml:"stderr"`
	Error       string `yaml:"error"`
	TimedOut    bool   `yaml:"timed_out"`
	Cwd         string `yaml:"cwd"`
	SandboxMode string `yaml:"sandbox_mode"`
}

// monorepo creates <tmp>/monorepo/frontend and returns both paths.
func monorepo(t *testing.T) (root, frontend string) {
	t.Helper()
	root = filepath.Join(t.TempDir(), "monorepo")
	frontend = filepath.Join(root, "frontend")
	if err := os.MkdirAll(frontend, 0o755); err != nil {
		t.Fatal(err)
	}
	return root, frontend
}

func parseYAML(t *testing.T, res *mcp.CallToolResult) cmdYAML {
	t.Helper()
	var y cmdYAML
	if err := yaml.Unmarshal([]byte(text(res)), &y); err != nil {
		t.Fatalf("content is not YAML: %v\n%s", err, text(res))
	}
	return y
}

// mustRun asserts a successful run (exit 0) and returns its YAML.
func mustRun(t *testing.T, s *server, tool string, args map[string]any) cmdYAML {
	t.Helper()
	res := s.call(tool, args)
	y := parseYAML(t, res)
	if res.IsError || y.ExitCode == nil || *y.ExitCode != 0 {
		t.Fatalf("%s %v: want exit 0, got isError=%v\n%s", tool, args, res.IsError, text(res))
	}
	return y
}

// mustReject asserts a tool error whose message contains every want.
func mustReject(t *testing.T, s *server, tool string, args map[string]any, want ...string) {
	t.Helper()
	res := s.call(tool, args)
	if !res.IsError {
		t.Fatalf("%s %v: want a rejection, got\n%s", tool, args, text(res))
	}
	// A rejection is the error object of docs/errors.md: the message and a code.
	var e struct{ Error, Code string }
	if err := json.Unmarshal([]byte(text(res)), &e); err != nil || e.Code == "" {
		t.Fatalf("%s %v: rejection is not an {error, code} object: %s", tool, args, text(res))
	}
	for _, w := range want {
		if !strings.Contains(e.Error, w) {
			t.Errorf("%s %v: error %q does not mention %q", tool, args, e.Error, w)
		}
	}
}

func npmVersion(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("npm", "-v").Output()
	if err != nil {
		t.Skipf("npm not installed: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestCommandsTimeoutDefault(t *testing.T) {
	// GIVEN ALLOWED_COMMANDS includes bash (and a short default timeout)
	s := start(t, "ALLOWED_COMMANDS=bash,sleep,echo", "CODEXEC_DEFAULT_TIMEOUT_MS=1500", "CODEXEC_KILL_GRACE_MS=500")
	marker := filepath.Join(t.TempDir(), "survived")
	// WHEN a command would exceed the default timeout (a child in the background too)
	began := time.Now()
	res := s.call("execute_command", map[string]any{"command": "echo started; bash -c 'sleep 30; echo x > " + marker + "' & sleep 30"})
	// THEN the server terminates the process and returns a timeout error with partial output
	y := parseYAML(t, res)
	if !res.IsError || !y.TimedOut || !strings.Contains(y.Error, "timeout") || y.Stdout != "started\n" {
		t.Fatalf("want timeout error with partial stdout, got isError=%v %+v", res.IsError, y)
	}
	if d := time.Since(began); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Error("background child survived the timeout")
	}
}

func TestCommandsTimeoutOverride(t *testing.T) {
	// GIVEN ALLOWED_COMMANDS includes bash; the default timeout is long
	s := start(t, "ALLOWED_COMMANDS=bash,true,echo", "CODEXEC_DEFAULT_TIMEOUT_MS=60000", "CODEXEC_KILL_GRACE_MS=500")
	// WHEN timeout_ms is set to a custom value
	began := time.Now()
	res := s.call("execute_command", map[string]any{"command": "bash -c 'while true; do true; done'", "timeout_ms": 700})
	// THEN the provided timeout is used
	y := parseYAML(t, res)
	if !res.IsError || !y.TimedOut || !strings.Contains(y.Error, "0.7 seconds") {
		t.Fatalf("want a 0.7 s timeout, got %+v", y)
	}
	if d := time.Since(began); d > 8*time.Second {
		t.Errorf("the 700 ms timeout took %v", d)
	}
	// and a custom timeout longer than the command lets it finish
	y = mustRun(t, s, "execute_command", map[string]any{"command": "bash -c 'echo done'", "timeout_ms": 20000})
	if y.Stdout != "done\n" {
		t.Errorf("stdout %q", y.Stdout)
	}
}

func TestCommandsAllowed(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hi"), 0o644); err != nil {
		t.Fatal(err)
	}
	// GIVEN ALLOWED_COMMANDS is "ls,cat"
	s := startIn(t, dir, "ALLOWED_COMMANDS=ls,cat")
	// WHEN execute_command runs "ls" THEN it is executed
	if y := mustRun(t, s, "execute_command", map[string]any{"command": "ls"}); y.Stdout != "hello.txt\n" {
		t.Errorf("ls stdout %q", y.Stdout)
	}
	if y := mustRun(t, s, "execute_command", map[string]any{"command": "ls | cat && cat hello.txt"}); y.Stdout != "hello.txt\nhi" {
		t.Errorf("pipeline stdout %q", y.Stdout)
	}
}

func TestCommandsDisallowed(t *testing.T) {
	// GIVEN ALLOWED_COMMANDS is "ls"; WHEN pwd THEN not executed, error says not allowed
	dir := t.TempDir()
	s := startIn(t, dir, "ALLOWED_COMMANDS=ls")
	mustReject(t, s, "execute_command", map[string]any{"command": "pwd > marker"}, `"pwd"`, "not allowed")
	assertAbsent(t, filepath.Join(dir, "marker"))
}

func TestCommandsWildcard(t *testing.T) {
	// GIVEN ALLOWED_COMMANDS is "*"; WHEN whoami THEN executed
	s := start(t, "ALLOWED_COMMANDS=*")
	want, _ := exec.Command("whoami").Output()
	y := mustRun(t, s, "execute_command", map[string]any{"command": "whoami"})
	if y.SandboxMode != "subprocess" {
		// Isolated modes run as the unprivileged uid 65534, whatever its name.
		if y.Stdout == "" || y.Stdout == "root\n" {
			t.Errorf("whoami %q in %s mode: want the unprivileged sandbox user", y.Stdout, y.SandboxMode)
		}
		return
	}
	if y.Stdout != string(want) {
		t.Errorf("whoami %q, want %q (sandbox %s)", y.Stdout, want, y.SandboxMode)
	}
}

func TestCommandsUnsetGuidance(t *testing.T) {
	s := start(t)
	mustReject(t, s, "execute_command", map[string]any{"command": "ls"}, "ALLOWED_COMMANDS", "ALLOWED_COMMANDS=ls,cat", "*")
	mustReject(t, s, "execute_process", map[string]any{"file": "ls"}, "ALLOWED_COMMANDS=ls,cat")
}

func TestCommandsYAMLOutput(t *testing.T) {
	// GIVEN a command executes successfully WHEN the response is built THEN the
	// content is YAML with exit_code, stdout and stderr
	s := start(t, "ALLOWED_COMMANDS=bash,echo,exit")
	res := s.call("execute_command", map[string]any{"command": "bash -c 'echo out; echo \"a: b\"; echo err >&2; exit 3'"})
	if res.IsError {
		t.Fatalf("a non-zero exit is a normal result: %s", text(res))
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text(res)), &m); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, text(res))
	}
	if m["exit_code"] != 3 || m["stdout"] != "out\na: b\n" || m["stderr"] != "err\n" {
		t.Fatalf("YAML %v", m)
	}
}

func TestCommandsRelativeCwd(t *testing.T) {
	v := npmVersion(t)
	root, frontend := monorepo(t)
	// GIVEN ALLOWED_COMMANDS includes npm and the server runs in the monorepo
	s := startIn(t, root, "ALLOWED_COMMANDS=npm,pwd")
	// WHEN npm -v runs with cwd "frontend" THEN it runs in frontend
	y := mustRun(t, s, "execute_command", map[string]any{"command": "npm -v && pwd", "cwd": "frontend"})
	if y.Stdout != v+"\n"+frontend+"\n" || y.Cwd != frontend {
		t.Fatalf("got %+v, want npm %s in %s", y, v, frontend)
	}
}

func TestCommandsAbsoluteCwd(t *testing.T) {
	v := npmVersion(t)
	_, frontend := monorepo(t)
	s := start(t, "ALLOWED_COMMANDS=npm")
	y := mustRun(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": frontend})
	if strings.TrimSpace(y.Stdout) != v || y.Cwd != frontend {
		t.Fatalf("got %+v", y)
	}
}

func TestCommandsMissingCwd(t *testing.T) {
	root, _ := monorepo(t)
	s := startIn(t, root, "ALLOWED_COMMANDS=npm,touch")
	mustReject(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": "does-not-exist"}, "does-not-exist")
	mustReject(t, s, "execute_command", map[string]any{"command": "touch ran", "cwd": "does-not-exist"}, "does-not-exist")
	assertAbsent(t, filepath.Join(root, "ran"))
	assertAbsent(t, filepath.Join(root, "does-not-exist"))
}

func TestCommandsWithinRoots(t *testing.T) {
	v := npmVersion(t)
	root, frontend := monorepo(t)
	s := start(t, "ALLOWED_COMMANDS=npm", "ALLOWED_CWD_ROOTS="+root)
	if y := mustRun(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": frontend}); strings.TrimSpace(y.Stdout) != v {
		t.Fatalf("stdout %q", y.Stdout)
	}
}

func TestCommandsOutsideRoots(t *testing.T) {
	root, _ := monorepo(t)
	outside := t.TempDir()
	link := filepath.Join(root, "escape")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	s := start(t, "ALLOWED_COMMANDS=npm,touch", "ALLOWED_CWD_ROOTS="+root)
	mustReject(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": "/tmp"}, "not allowed", "ALLOWED_CWD_ROOTS")
	for _, cwd := range []string{link, root + "/frontend/../..", outside} {
		mustReject(t, s, "execute_command", map[string]any{"command": "touch pwned", "cwd": cwd}, "not allowed")
	}
	mustReject(t, s, "execute_process", map[string]any{"file": "touch", "args": []string{"pwned"}, "cwd": link}, "not allowed")
	assertAbsent(t, filepath.Join(outside, "pwned"))
}

func TestCommandsNoRootsUnrestricted(t *testing.T) {
	v := npmVersion(t)
	s := start(t, "ALLOWED_COMMANDS=npm")
	if y := mustRun(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": "/tmp"}); strings.TrimSpace(y.Stdout) != v || y.Cwd != "/tmp" {
		t.Fatalf("got %+v", y)
	}
}

func TestCommandsInvalidRoot(t *testing.T) {
	root, frontend := monorepo(t)
	s := start(t, "ALLOWED_COMMANDS=npm,touch", "ALLOWED_CWD_ROOTS="+root+",/path/that/does/not/exist")
	mustReject(t, s, "execute_command", map[string]any{"command": "npm -v", "cwd": frontend}, "configuration", "ALLOWED_CWD_ROOTS", "/path/that/does/not/exist")
	mustReject(t, s, "execute_command", map[string]any{"command": "touch ran", "cwd": frontend}, "configuration")
	assertAbsent(t, filepath.Join(frontend, "ran"))
}

func TestCommandsProcessRuns(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=python3,cat")
	res := s.call("execute_process", map[string]any{"file": "python3", "args": []string{"-c", "import sys; print('argv', sys.argv[1:])", "$(x)", "a b"}})
	y := parseYAML(t, res)
	if res.IsError || y.ExitCode == nil || *y.ExitCode != 0 || y.Stdout != "argv ['$(x)', 'a b']\n" {
		t.Fatalf("got %+v\n%s", y, text(res))
	}
	if y := mustRun(t, s, "execute_process", map[string]any{"file": "cat", "input": "from stdin"}); y.Stdout != "from stdin" {
		t.Errorf("stdin: %q", y.Stdout)
	}
}

func TestCommandsProcessDisallowed(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=echo")
	mustReject(t, s, "execute_process", map[string]any{"file": "python3", "args": []string{"-c", "print(1)"}}, `"python3"`, "not allowed")
	mustReject(t, s, "execute_process", map[string]any{"file": "./echo"}, "relative path")
}

// TestCommandsBypassAttempts: with only ls allowed, nothing of a script that
// hides another command runs — not even the allowed ls before it.
func TestCommandsBypassAttempts(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "x")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startIn(t, dir, "ALLOWED_COMMANDS=ls")
	attempts := []string{
		"ls; rm -rf x", "ls && touch pwned", "ls || touch pwned", "ls $(whoami; touch pwned)", "ls `touch pwned`",
		"ls | sh", "echo touch pwned | sh", "ls > >(touch pwned)", "(touch pwned)", "{ touch pwned; }",
		"f() { touch pwned; }; f", "X=touch; $X pwned", "$(echo touch) pwned", "eval 'touch pwned'",
		"exec touch pwned", "PATH=/tmp ls", "ls & touch pwned", "if ls; then touch pwned; fi",
		"for i in 1; do touch pwned; done", "\\touch pwned", "'touch' pwned", "t{ouch,} pwned",
		"x='a[$(touch pwned)]'; echo $((x))", "./ls", "bash -c 'touch pwned'", "ls <(touch pwned)",
		"cat <<EOF\n$(touch pwned)\nEOF", "ls\ntouch pwned", "command touch pwned", ". ./script",
	}
	for _, a := range attempts {
		res := s.call("execute_command", map[string]any{"command": a})
		if !res.IsError {
			t.Errorf("%q was not rejected:\n%s", a, text(res))
		}
	}
	assertAbsent(t, filepath.Join(dir, "pwned"))
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("victim file changed: %q %v", b, err)
	}
	// The same commands written only with ls still run.
	mustRun(t, s, "execute_command", map[string]any{"command": "ls x && ls | ls $(ls x) ; /usr/bin/ls x"})
}

func TestCommandsLogged(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=echo")
	mustRun(t, s, "execute_command", map[string]any{"command": "echo logged-command"})
	mustRun(t, s, "execute_process", map[string]any{"file": "echo", "args": []string{"logged process"}})
	files, _ := filepath.Glob(filepath.Join(s.DataDir, "logs", "executions-*.jsonl"))
	var all strings.Builder
	for _, f := range files {
		b, _ := os.ReadFile(f)
		all.Write(b)
	}
	for _, want := range []string{`"tool":"execute_command"`, `"code":"echo logged-command"`, `"tool":"execute_process"`, `"code":"echo 'logged process'"`} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, all.String())
		}
	}
}

func TestCommandsStrippedEnv(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=env", "SECRET_TOKEN=hunter2")
	y := mustRun(t, s, "execute_process", map[string]any{"file": "env"})
	if strings.Contains(y.Stdout, "hunter2") || !strings.Contains(y.Stdout, "PATH=") {
		t.Fatalf("environment not stripped:\n%s", y.Stdout)
	}
}

func assertAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err == nil {
		t.Errorf("%s exists: a rejected command ran", p)
	}
}

// The timeout leaves room for python3 on PATH (a pyenv shim here) to start and
// print on a loaded machine; the point is the partial output, not the speed.
func TestCommandsProcessTimeout(t *testing.T) {
	s := start(t, "ALLOWED_COMMANDS=python3", "CODEXEC_KILL_GRACE_MS=500")
	res := s.call("execute_process", map[string]any{"file": "python3", "timeout_ms": 3000,
		"args": []string{"-u", "-c", "import time; print('partial'); time.sleep(30)"}})
	y := parseYAML(t, res)
	if !res.IsError || !y.TimedOut || y.Stdout != "partial\n" || !strings.Contains(y.Error, "timeout") {
		t.Fatalf("want timeout with partial output, got isError=%v %+v", res.IsError, y)
	}
	mustReject(t, s, "execute_process", map[string]any{"file": "python3", "timeout_ms": 0}, "timeout_ms")
}
