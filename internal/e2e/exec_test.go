package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// execResult mirrors execute_code's structured output on the wire.
type execResult struct {
	Success       bool     `json:"success"`
	ExecutionID   string   `json:"execution_id"`
	Language      string   `json:"language"`
	Stdout        string   `json:"stdout"`
	Stderr        string   `json:"stderr"`
	ExitCode      *int     `json:"exit_code"`
	DurationMs    int64    `json:"duration_ms"`
	ExecutionTime float64  `json:"execution_time"`
	Status        string   `json:"status"`
	ErrorMessage  *string  `json:"error_message"`
	TimedOut      bool     `json:"timed_out"`
	Truncated     bool     `json:"truncated"`
	Artifacts     []string `json:"artifacts"`
	SessionID     *string  `json:"session_id"`
	// WorkingDirNote says how the code could use a caller's working_dir.
	WorkingDirNote string `json:"working_dir_note"`
	// Limits is which resource limits held and by what (memory, pids,
	// cpu, disk).
	Limits map[string]string `json:"limits"`
}

func (s *server) exec(args map[string]any) (execResult, *mcp.CallToolResult) {
	s.t.Helper()
	var r execResult
	res := s.callInto("execute_code", args, &r)
	return r, res
}

func TestExecuteHelloAllLanguages(t *testing.T) {
	s := start(t)
	cases := []struct{ lang, code, want string }{
		{"python", "print('hello from python')", "hello from python\n"},
		{"node", "console.log('hello from node')", "hello from node\n"},
		{"javascript", "console.log('hello from js')", "hello from js\n"},
		{"typescript", "const n: number = 42; console.log(`hello from ts ${n}`)", "hello from ts 42\n"},
		{"ts", "import * as os from 'os'; console.log(typeof os.cpus)", "function\n"},
		{"bash", "echo hello from bash", "hello from bash\n"},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			r, res := s.exec(map[string]any{"language": c.lang, "code": c.code})
			if res.IsError || r.Status != "success" || !r.Success || r.ExitCode == nil || *r.ExitCode != 0 {
				t.Fatalf("not a success: %+v %s", r, text(res))
			}
			if diff := cmp.Diff(c.want, r.Stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.HasPrefix(r.ExecutionID, "exec_") || r.ErrorMessage != nil {
				t.Errorf("bad id or error message: %+v", r)
			}
		})
	}
}

func TestExecuteStdinSeed003Example(t *testing.T) {
	s := start(t)
	r, _ := s.exec(map[string]any{"language": "python", "code": "name = input('Enter your name: ')\nprint(f'Hello, {name}!')", "stdin": "Alice", "timeout": 10})
	if r.Status != "success" || !strings.HasSuffix(r.Stdout, "Hello, Alice!\n") || r.ExecutionTime <= 0 {
		t.Fatalf("got %+v", r)
	}
}

func TestExecuteNonZeroExit(t *testing.T) {
	s := start(t)
	r, res := s.exec(map[string]any{"language": "python", "code": "import sys\nprint('partial')\nsys.exit(3)"})
	if res.IsError {
		t.Fatalf("a failing program must be a successful tool call: %s", text(res))
	}
	if r.Success || r.Status != "execution_error" || r.ExitCode == nil || *r.ExitCode != 3 || r.Stdout != "partial\n" {
		t.Fatalf("got %+v", r)
	}
	r, _ = s.exec(map[string]any{"language": "python", "code": "1/0"})
	if r.Status != "execution_error" || !strings.Contains(r.Stderr, "ZeroDivisionError") {
		t.Fatalf("exception: %+v", r)
	}
}

func TestExecuteTimeoutKeepsPartialOutput(t *testing.T) {
	s := start(t)
	// One run first: under a loaded CI machine a fresh server's first
	// python start can take most of the 1 s limit, printing nothing.
	if r, _ := s.exec(map[string]any{"language": "python", "code": "print(1)"}); r.Stdout != "1\n" {
		t.Fatalf("warm-up run: %+v", r)
	}
	code := "import time\nfor i in range(1, 3):\n    print(f'Processing row {i}...', flush=True)\ntime.sleep(60)"
	begin := time.Now()
	r, res := s.exec(map[string]any{"language": "python", "code": code, "timeout_ms": 1000})
	wall := time.Since(begin)
	if res.IsError || r.Status != "timeout" || !r.TimedOut || r.ExitCode != nil || r.Success {
		t.Fatalf("got %+v", r)
	}
	if r.Stdout != "Processing row 1...\nProcessing row 2...\n" {
		t.Errorf("partial stdout = %q", r.Stdout)
	}
	if r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "timed out after 1 second") {
		t.Errorf("error_message = %v", r.ErrorMessage)
	}
	t.Logf("duration %d ms, wall %v", r.DurationMs, wall)
	if r.DurationMs < 1000 || wall > 4*time.Second {
		t.Errorf("duration %d ms, wall %v: want just over the 1 s limit", r.DurationMs, wall)
	}
}

func TestExecuteTimeoutEscalatesToSIGKILL(t *testing.T) {
	s := start(t, "CODEXEC_KILL_GRACE_MS=500")
	// One run first, as in TestExecuteTimeoutKeepsPartialOutput: on a
	// loaded machine a fresh server's first python start can take the whole
	// limit, and the program is stopped before it ignores anything.
	if r, _ := s.exec(map[string]any{"language": "python", "code": "print(1)"}); r.Stdout != "1\n" {
		t.Fatalf("warm-up run: %+v", r)
	}
	code := "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ignoring', flush=True)\nwhile True: pass"
	r, _ := s.exec(map[string]any{"language": "python", "code": code, "timeout_ms": 1000})
	// A program that ignores SIGTERM and is never killed would run on
	// forever: ending within a few seconds of the limit is the escalation.
	if r.Status != "timeout" || r.Stdout != "ignoring\n" || r.DurationMs > 5000 {
		t.Fatalf("got %+v", r)
	}
}

func TestExecuteBothTimeoutsRejected(t *testing.T) {
	s := start(t)
	r, res := s.exec(map[string]any{"language": "python", "code": "print(1)", "timeout": 5, "timeout_ms": 5000})
	if !res.IsError || r.Status != "setup_error" || !strings.Contains(text(res), "not both") {
		t.Fatalf("got %+v %s", r, text(res))
	}
	_, res = s.exec(map[string]any{"language": "python", "code": "print(1)", "timeout": 301})
	if !res.IsError || !strings.Contains(text(res), "between 1 and 300") {
		t.Fatalf("timeout 301 accepted: %s", text(res))
	}
	_, res = s.exec(map[string]any{"language": "ruby", "code": "puts 1"})
	if !res.IsError || !strings.Contains(text(res), "unsupported language") {
		t.Fatalf("ruby accepted: %s", text(res))
	}
}

func TestExecuteTypeScriptCompileError(t *testing.T) {
	s := start(t)
	r, res := s.exec(map[string]any{"language": "typescript", "code": "const ok = 1;\nlet x: = 5;\nconsole.log(x)"})
	if res.IsError || r.Status != "execution_error" || r.ErrorMessage == nil {
		t.Fatalf("got %+v", r)
	}
	if !strings.Contains(*r.ErrorMessage, "line 2, column 8") {
		t.Errorf("error_message %q lacks line/column", *r.ErrorMessage)
	}
}

func TestExecuteTruncationExactMarker(t *testing.T) {
	s := start(t)
	r, _ := s.exec(map[string]any{"language": "python", "code": "print('a' * 20000)"})
	want := strings.Repeat("a", 4000) + "\n\n[... truncated 12001 characters ...]\n\n" + strings.Repeat("a", 3999) + "\n"
	if !r.Truncated || r.Stdout != want {
		t.Fatalf("truncated=%v, stdout len %d, head %q", r.Truncated, len(r.Stdout), r.Stdout[:min(80, len(r.Stdout))])
	}
}

func TestExecuteEnvironmentStripped(t *testing.T) {
	s := start(t, "GROQ_API_KEY=sk-secret", "TELEGRAM_SESSION=abc")
	r, _ := s.exec(map[string]any{"language": "python", "code": "import os\nprint(','.join(sorted(os.environ)))\nprint(os.environ['HOME'] == os.getcwd())"})
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 2 || lines[1] != "True" {
		t.Fatalf("stdout %q", r.Stdout)
	}
	for _, k := range strings.Split(lines[0], ",") {
		switch k {
		// bubblewrap sets PWD (to the working directory, = HOME); PYTHONPATH
		// points at globally installed packages and codexec's support module;
		// the MPL*/MATPLOTLIBRC values are codexec's own (plots as images);
		// CODEXEC_RUN marks a subprocess run's processes (no secret);
		// nothing else may reach the program.
		case "PATH", "HOME", "LANG", "TERM", "LC_CTYPE", "PWD", "PYTHONPATH", "MPLBACKEND", "MATPLOTLIBRC", "MPLCONFIGDIR", "CODEXEC_RUN":
		default:
			t.Errorf("unexpected variable %s reached the program", k)
		}
	}
}

func TestExecuteArtifactsAndLog(t *testing.T) {
	wd := t.TempDir()
	// Isolated modes write a caller's directory only under the operator's
	// writable roots, and there only where the directory's own permissions
	// let the unprivileged sandbox user write (see SECURITY.md).
	s := start(t, "CODEXEC_WRITABLE_ROOTS="+wd)
	if err := os.Chmod(wd, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "old.txt"), []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	code := "import os\nopen('data_summary.csv','w').write('a,b\\n')\nos.makedirs('sub', exist_ok=True)\nopen('sub/n.txt','w').write('1')\nos.remove('old.txt')"
	meta := mcp.Meta{"agent_id": "annabelle", "trace_id": "tr_abc123", "chat_id": "telegram:12345"}
	var r execResult
	decodeStructured(t, s.callMeta("execute_code", map[string]any{"language": "python", "code": code, "working_dir": wd}, meta), &r)
	if diff := cmp.Diff([]string{"data_summary.csv", "sub/n.txt"}, r.Artifacts); diff != "" {
		t.Errorf("artifacts (-want +got):\n%s", diff)
	}
	entry := findLogEntry(t, s.DataDir, r.ExecutionID)
	arts := entry["artifacts"].(map[string]any)
	if fmt.Sprint(arts["deleted"]) != "[old.txt]" || fmt.Sprint(arts["created"]) != "[data_summary.csv sub/n.txt]" {
		t.Errorf("logged artifacts %v", arts)
	}
	ctx := entry["context"].(map[string]any)
	if ctx["agent_id"] != "annabelle" || ctx["trace_id"] != "tr_abc123" || ctx["chat_id"] != "telegram:12345" {
		t.Errorf("logged context %v", ctx)
	}
	for _, k := range []string{"type", "execution_id", "language", "code", "stdin", "stdout", "stderr", "exit_code", "timed_out", "duration_ms", "memory_peak_mb", "sandbox_mode", "working_dir", "executed_at"} {
		if _, ok := entry[k]; !ok {
			t.Errorf("log entry lacks %s: %v", k, entry)
		}
	}
}

// findLogEntry scans the daily JSONL logs for the execution entry of an id
// (files of older versions also hold a started record before it).
func findLogEntry(t *testing.T, dataDir, id string) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dataDir, "logs", "executions-*.jsonl"))
	sort.Strings(files)
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["execution_id"] == id && m["type"] == "execution" {
				fh.Close()
				return m
			}
		}
		fh.Close()
	}
	t.Fatalf("execution %s not in logs %v", id, files)
	return nil
}

func TestExecuteForbiddenWorkingDir(t *testing.T) {
	s := start(t)
	marker := filepath.Join(t.TempDir(), "ran")
	link := filepath.Join(t.TempDir(), "innocent")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	for _, wd := range []string{"/etc", "/var/log", link, link + "/../etc", "~/.ssh", filepath.Join(s.DataDir, "logs")} {
		t.Run(wd, func(t *testing.T) {
			if wd == "~/.ssh" {
				home, _ := os.UserHomeDir()
				_ = os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
			}
			r, res := s.exec(map[string]any{"language": "python", "code": fmt.Sprintf("open(%q,'w').write('x')", marker), "working_dir": wd})
			if !res.IsError || r.Status != "setup_error" || !strings.Contains(text(res), "working_dir") {
				t.Fatalf("not rejected: %+v %s", r, text(res))
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatal("the code ran although working_dir was rejected")
			}
		})
	}
}

// TestExecuteNoSurvivors checks that background, setsid and double-forked
// children die with the run.
func TestExecuteNoSurvivors(t *testing.T) {
	s := start(t)
	tag := strconv.Itoa(int(time.Now().UnixNano()%100000) + 100000)
	code := fmt.Sprintf("sleep %s.1 &\n(sleep %s.2 &)\nsetsid sleep %s.3 &\nsetsid bash -c 'sleep %s.4 & disown' &\necho started", tag, tag, tag, tag)
	r, _ := s.exec(map[string]any{"language": "bash", "code": code, "timeout": 10})
	if r.Status != "success" || r.Stdout != "started\n" {
		t.Fatalf("got %+v", r)
	}
	if left := processesMatching(tag); len(left) > 0 {
		t.Fatalf("processes outlived the run: %v", left)
	}
}

// processesMatching lists live (non-zombie) processes whose command line
// contains s.
func processesMatching(s string) []string {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, d := range dirs {
		cmd, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), s) {
			continue
		}
		st, _ := os.ReadFile(filepath.Join(d, "stat"))
		if i := strings.LastIndexByte(string(st), ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
			continue
		}
		out = append(out, filepath.Base(d)+":"+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// TestExecuteHugeOutputBoundedMemory prints 1 GiB and checks that the server
// truncates correctly without growing.
func TestExecuteHugeOutputBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB output test skipped in -short mode")
	}
	s := start(t)
	code := "import sys\nb = 'x' * (1 << 20) + '\\n'\nw = sys.stdout.write\nfor _ in range(1024): w(b)"
	r, _ := s.exec(map[string]any{"language": "python", "code": code, "timeout": 120})
	if r.Status != "success" || !r.Truncated {
		t.Fatalf("got status %s truncated %v stderr %q", r.Status, r.Truncated, r.Stderr)
	}
	total := 1024 * ((1 << 20) + 1)
	want := fmt.Sprintf("[... truncated %d characters ...]", total-8000)
	if !strings.Contains(r.Stdout, want) {
		t.Errorf("marker %q missing", want)
	}
	if hwm := peakRSSKiB(t, s.Cmd.Process.Pid); hwm > 150*1024 {
		t.Errorf("server peak RSS %d KiB: output was not bounded", hwm)
	}
}

func peakRSSKiB(t *testing.T, pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func TestToolsListHasExecuteCodeSchema(t *testing.T) {
	sameInEveryMode(t, "a schema test")
	s := start(t)
	res, err := s.Session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "execute_code" {
			continue
		}
		b, _ := json.Marshal(tool.InputSchema)
		for _, f := range []string{"language", "code", "stdin", "timeout_ms", "timeout", "working_dir", "session_id", "intent", "context"} {
			if !strings.Contains(string(b), `"`+f+`"`) {
				t.Errorf("input schema lacks %s", f)
			}
		}
		if tool.OutputSchema == nil || tool.Annotations == nil {
			t.Error("execute_code lacks output schema or annotations")
		}
		return
	}
	t.Fatal("execute_code not listed")
}

// TestUnavailableLanguageIsReported checks the start-up health check: a
// broken interpreter makes only its language unavailable, with the cause.
// The first node call waits for node's background check and reports it.
func TestUnavailableLanguageIsReported(t *testing.T) {
	s := start(t, "CODEXEC_NODE=/nonexistent/node")
	r, res := s.exec(map[string]any{"language": "node", "code": "console.log(1)"})
	if res.IsError || r.Status != "setup_error" || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "/nonexistent/node") {
		t.Fatalf("got %+v", r)
	}
	r, _ = s.exec(map[string]any{"language": "python", "code": "print(2)"})
	if r.Status != "success" || r.Stdout != "2\n" {
		t.Fatalf("python should keep working: %+v", r)
	}
	// The check runs in the background (initialize is not held up by it);
	// its summary is logged once every language's probe is done.
	if log := s.waitLog("msg=\"health check\"", 30*time.Second); !strings.Contains(log, "language unavailable") {
		t.Errorf("health summary missing from the log:\n%s", log)
	}
}

// waitLog waits until the server log contains want (or the deadline passes)
// and returns the log.
func (s *server) waitLog(want string, d time.Duration) string {
	deadline := time.Now().Add(d)
	for !strings.Contains(s.Stderr.String(), want) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return s.Stderr.String()
}

// sandboxMode reads the sandbox mode a run used from its log entry:
// results do not repeat the server's mode.
func (s *server) sandboxMode(executionID string) string {
	var e struct {
		SandboxMode string `json:"sandbox_mode"`
	}
	s.callInto("get_execution_log", map[string]any{"execution_id": executionID}, &e)
	return e.SandboxMode
}
