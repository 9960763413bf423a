// Package sandboxtest holds what the tests of every sandbox backend share:
// the warm runner semantics every backend must keep (WarmSemantics), runs
// and their results, soak runs and the leak check after them, and the
// TestMain that lets a test binary act as the sandbox helper. It is for
// tests only.
package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/cgroup"
	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// OwnedRoot makes the tests' workspaces (t.TempDir()s) codexec's own:
// handed to the sandbox user and writable, as the engine's fresh
// workspaces are. Callers' read-only directories are tested end to end
// (internal/e2e/edge_test.go).
var OwnedRoot = os.TempDir()

// Main lets the test binary act as the helper (sandbox-init,
// sandbox-landlock, sandbox-fsize, sandbox-runner), as the codexec binary
// does, so the backends can re-execute it; then it runs the tests.
func Main(m *testing.M) {
	if code, ok := helper.Dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// PoolBackend is a backend whose warm runners can be inspected.
type PoolBackend interface {
	sandbox.Backend
	sandbox.Pooled
}

// KindHits is how many runs of kind b's warm runners served.
func KindHits(n sandbox.Pooled, kind string) uint64 {
	var h uint64
	for _, s := range n.PoolStats() {
		if s.Kind == kind {
			h += s.Hits
		}
	}
	return h
}

// ForkHits counts runs served by forked runners.
func ForkHits(n sandbox.Pooled) uint64 {
	var h uint64
	for _, s := range n.PoolStats() {
		if strings.HasPrefix(s.Key, "fork ") {
			h += s.Hits
		}
	}
	return h
}

// Alive reports whether pid runs (and is not a zombie).
func Alive(pid int) bool {
	st, _ := proc.State(pid)
	return st != 0 && st != 'Z'
}

// PooledBackend is a backend with warm runners.
type PooledBackend interface {
	sandbox.Backend
	sandbox.Pooled
	Prewarm(sandbox.Spec)
	AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool)
}

// warmCase is one run of WarmSemantics and what it must give.
type warmCase struct {
	name, code, stdin string
	args              []string
	want              Result
}

// warmCases are the semantics checks for runners of kind, run in dir (the
// program sees it as ws) as user uid. Runs go in order: a file written by
// one is listed by a later one.
func warmCases(kind, dir, ws string, uid int) []warmCase {
	if kind == sandbox.WarmBash {
		return bashWarmCases(dir, ws, uid)
	}
	if kind == sandbox.WarmNode {
		return []warmCase{
			{name: "output", code: "console.log('out'); console.error('err')", want: Result{Stdout: "out\n", Stderr: "err\n"}},
			{name: "exit status", code: "process.exitCode = 3", want: Result{Exit: sandbox.Exit{Code: 3}}},
			{name: "process.exit", code: "console.log('a'); process.exit(5)", want: Result{Stdout: "a\n", Exit: sandbox.Exit{Code: 5}}},
			{name: "stdin", code: "console.log(require('fs').readFileSync(0, 'utf8').toUpperCase())", stdin: "abc", want: Result{Stdout: "ABC\n"}},
			{name: "arguments", code: "console.log(process.argv.slice(1).join())", args: []string{"a", dir + "/f"},
				want: Result{Stdout: "a," + ws + "/f\n"}},
			{name: "workspace, cwd, home, user", code: "require('fs').writeFileSync('made', 'x'); console.log(process.cwd(), process.env.HOME, process.getuid(), require('fs').readdirSync('.').join())",
				want: Result{Stdout: fmt.Sprintf("%s %s %d made\n", ws, ws, uid)}},
			{name: "late output", code: "setTimeout(() => console.log('later'), 100)", want: Result{Stdout: "later\n"}},
		}
	}
	return []warmCase{
		{name: "output", code: "import sys; print('out'); print('err', file=sys.stderr)",
			want: Result{Stdout: "out\n", Stderr: "err\n"}},
		{name: "exit status", code: "import sys; sys.exit(3)", want: Result{Exit: sandbox.Exit{Code: 3}}},
		{name: "exit status above 128", code: "import sys; sys.exit(137)", want: Result{Exit: sandbox.Exit{Code: 137}}},
		{name: "os._exit", code: "import os, sys; sys.stdout.flush(); os._exit(7)", want: Result{Exit: sandbox.Exit{Code: 7}}},
		{name: "stdin", code: "import sys; print(sys.stdin.read().upper())", stdin: "abc",
			want: Result{Stdout: "ABC\n"}},
		{name: "no stdin", code: "import sys; print(repr(sys.stdin.read()))", want: Result{Stdout: "''\n"}},
		{name: "signals as in a fresh interpreter", code: "import signal as s; print(s.getsignal(s.SIGINT) is s.default_int_handler, s.getsignal(s.SIGQUIT) == s.SIG_DFL)",
			want: Result{Stdout: "True True\n"}},
		{name: "arguments", code: "import sys; print(sys.argv[1:])", args: []string{"a", dir + "/f"},
			want: Result{Stdout: fmt.Sprintf("['a', '%s/f']\n", ws)}},
		{name: "workspace, cwd, home, user", code: "import os; open('made', 'w').write('x'); print(os.getcwd(), os.environ['HOME'], os.getuid(), 'PATH' in os.environ)",
			want: Result{Stdout: fmt.Sprintf("%s %s %d True\n", ws, ws, uid)}},
		// The status socket at 1023 is the only one (python_run.py).
		{name: "no control socket left", code: "import os; print(sorted(os.listdir('.')), [f for f in os.listdir('/proc/self/fd') if os.path.exists('/proc/self/fd/' + f) and os.readlink('/proc/self/fd/' + f).startswith('socket:')])",
			want: Result{Stdout: "['made'] ['1023']\n"}},
	}
}

// bashWarmCases are warmCases for bash (exec runners).
func bashWarmCases(dir, ws string, uid int) []warmCase {
	return []warmCase{
		{name: "output", code: "echo out; echo err >&2", want: Result{Stdout: "out\n", Stderr: "err\n"}},
		{name: "exit status", code: "exit 3", want: Result{Exit: sandbox.Exit{Code: 3}}},
		{name: "stdin", code: "tr a-z A-Z", stdin: "abc", want: Result{Stdout: "ABC"}},
		{name: "no stdin", code: "cat; echo \"[$?]\"", want: Result{Stdout: "[0]\n"}},
		{name: "arguments", code: `echo "$0" "$@"`, args: []string{"a", dir + "/f"},
			want: Result{Stdout: "bash a " + ws + "/f\n"}},
		{name: "workspace, cwd, home, user", code: `echo x > made; echo "$PWD" "$HOME" "$(id -u)" "${PATH:+PATH}"`,
			want: Result{Stdout: fmt.Sprintf("%s %s %d PATH\n", ws, ws, uid)}},
		// bash -c holds only stdio: the control socket is not passed on.
		{name: "no control socket left", code: "ls /proc/$$/fd > /tmp/fds-$$; echo $(ls) $(cat /tmp/fds-$$); rm /tmp/fds-$$",
			want: Result{Stdout: "made 0 1 2\n"}},
	}
}

// BashCases are bash programs whose warm runs (exec runners) must give
// exactly what cold runs give: what the stub's wait and execve could
// change — identity, environment, shell state, descriptors, signal
// dispositions and mask, limits, exit — and the common shapes of a run.
// They read in.txt in the workspace, and their argument is "a1"; they
// write only in the workspace (subprocess mode has the host's /tmp).
var BashCases = []struct{ Name, Code string }{
	{"identity", `echo "$(id -u) $(id -g) $(id -G) $PWD $HOME $0 $* $(cat in.txt)"`},
	{"environment", `env | sed 's/^CODEXEC_RUN=.*/CODEXEC_RUN/' | sort`},
	{"shell state", `echo "$SHLVL $- $BASH_EXECUTION_STRING"; shopt; set -o`},
	// Not through a pipe: bash holds a pipeline's pipes while it starts it.
	{"descriptors", `ls -l /proc/$$/fd > fds; awk 'NR > 1 {print $9, $10, substr($11, 1, 5)}' fds; rm fds`},
	{"process status", `grep -E '^(Sig(Blk|Ign)|NoNewPrivs|Seccomp|Cap(Inh|Prm|Eff|Bnd|Amb)|Umask)' /proc/self/status`},
	{"limits", `ulimit -a`},
	{"exit status", `echo partial; exit 7`},
	{"signal", `echo before; kill -TERM $$`},
	{"error", `no_such_command_here`},
	{"stdin", `tr a-z A-Z`},
	{"write", `echo x > out.txt; cat out.txt; rm out.txt`},
	{"background child", `(sleep 0.3; echo late) & echo parent`},
	{"daemon", `setsid sleep 5 >/dev/null 2>&1 & echo started`},
	// Larger than a socket read: the run message comes in several.
	{"long code", ": '" + strings.Repeat("x", 100<<10) + "'; echo ${#BASH_EXECUTION_STRING}"},
}

// WarmSemantics checks that runs of kind (sandbox.WarmPython,
// sandbox.WarmNode, sandbox.WarmBash) served by b's warm runners keep the
// semantics of cold ones: output, exit status, stdin, arguments, the
// workspace dir (seen by the program as ws), environment, user (uid) and
// kills; each run must be served warm.
func WarmSemantics(t *testing.T, b PooledBackend, kind, dir, ws string, uid int) {
	for _, tc := range warmCases(kind, dir, ws, uid) {
		t.Run(tc.name, func(t *testing.T) {
			b.Prewarm(WarmSpec(kind, dir, ""))
			if _, ok := b.AwaitWarm(kind, 20*time.Second); !ok {
				t.Fatal("no warm runner became ready")
			}
			hits := PoolHits(b)
			spec := WarmSpec(kind, dir, tc.code, tc.args...)
			spec.Env = append(spec.Env, "HOME="+dir)
			if tc.stdin != "" {
				spec.Stdin = strings.NewReader(tc.stdin)
			}
			got := Run(t, b, spec)
			got.Exit.MemoryPeakBytes = 0 // where the backend measures it, it varies
			if got.Exit.Usage.Path != proc.PathWarm {
				t.Errorf("a run served warm says its sandbox path was %q, want %q", got.Exit.Usage.Path, proc.PathWarm)
			}
			got.Exit.Usage = proc.Usage{} // measurements vary; the path is checked above
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if PoolHits(b) != hits+1 {
				t.Errorf("the run was not served warm")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("file written in the workspace: %v", err)
	}
	if kind == sandbox.WarmNode {
		t.Run("uncaught error", func(t *testing.T) {
			b.AwaitWarm(kind, 20*time.Second)
			got := Run(t, b, WarmSpec(kind, dir, "throw new Error('boom')"))
			if got.Exit.Code != 1 || !strings.Contains(got.Stderr, "Error: boom") {
				t.Errorf("got %+v", got)
			}
		})
	}
	t.Run("kill", func(t *testing.T) { warmKill(t, b, kind, dir) })
}

func warmKill(t *testing.T, b PooledBackend, kind, dir string) {
	b.AwaitWarm(kind, 20*time.Second)
	hits := PoolHits(b)
	code := "import time; time.sleep(60)"
	switch kind {
	case sandbox.WarmNode:
		code = "setTimeout(() => {}, 60000)"
	case sandbox.WarmBash:
		code = "sleep 60; echo not reached"
	}
	p, err := b.Start(context.Background(), WarmSpec(kind, dir, code))
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
	if PoolHits(b) != hits+1 {
		t.Errorf("the run was not served warm")
	}
}

// PoolHits is how many runs b's warm runners served.
func PoolHits(b sandbox.Pooled) uint64 {
	var n uint64
	for _, s := range b.PoolStats() {
		n += s.Hits
	}
	return n
}

// WarmSpec is a python, node or bash run as the engine builds it.
func WarmSpec(kind, dir, code string, args ...string) sandbox.Spec {
	argv := []string{"/usr/bin/python3", "-c", code}
	switch kind {
	case sandbox.WarmNode:
		argv = []string{"/usr/bin/node", "-e", code}
	case sandbox.WarmBash:
		argv = []string{"/usr/bin/bash", "-c", code, "bash"}
	}
	return sandbox.Spec{ID: "w", Argv: append(argv, args...), Dir: dir, Warm: kind,
		Env:    []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8"},
		Limits: sandbox.Limits{MemoryBytes: 256 << 20, Pids: 64, DiskBytes: 16 << 20}}
}

// Result is how a run ended and what it printed.
type Result struct {
	Exit           sandbox.Exit
	Stdout, Stderr string
}

func Run(t *testing.T, b sandbox.Backend, spec sandbox.Spec) Result {
	t.Helper()
	var out, errb bytes.Buffer
	spec.Stdout, spec.Stderr = &out, &errb
	p, err := b.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Release(time.Second); err != nil {
		t.Errorf("release: %v", err)
	}
	return Result{ex, out.String(), errb.String()}
}

// WaitReady waits until the pool has a ready runner for spec (after one
// run has made the demand known).
func WaitReady(t *testing.T, n PoolBackend, spec sandbox.Spec) {
	t.Helper()
	kind := spec.Warm
	if !slices.ContainsFunc(n.PoolStats(), func(s sandbox.PoolStat) bool { return s.Kind == kind }) {
		Run(t, n, spec)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range n.PoolStats() {
			if s.Kind == kind && s.Ready > 0 {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no warm %s runner became ready: %+v", kind, n.PoolStats())
}

// SoakRuns makes runs calls of run with workers at once, each with its
// own workspace, and returns how many did not print their index.
func SoakRuns(t *testing.T, runs, workers int, run func(i int, ws string) Result) int {
	dir := t.TempDir()
	var wrong int
	var mu sync.Mutex
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ws := filepath.Join(dir, strconv.Itoa(i))
				_ = os.Mkdir(ws, 0o755)
				r := run(i, ws)
				if r.Exit.Code != 0 || strings.TrimSpace(r.Stdout) != strconv.Itoa(i) {
					mu.Lock()
					wrong++
					mu.Unlock()
					t.Errorf("run %d: %+v %q %q", i, r.Exit, r.Stdout, r.Stderr)
				}
			}
		}()
	}
	for i := 0; i < runs; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return wrong
}

func CountFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// CheckNoLeaks expects no child processes, no cgroups or staging mounts of
// this process, and (about) as many descriptors as before.
func CheckNoLeaks(t *testing.T, fdsBefore int) {
	t.Helper()
	pid := strconv.Itoa(os.Getpid())
	// Live children only: when other tests of the package have made the
	// test process a child subreaper (subprocess mode), dead sandbox
	// processes are re-parented to it as zombies nobody reaps here.
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(p)
			if state, _ := proc.State(pid); state != 'Z' && state != 0 {
				t.Errorf("leaked child process %d (state %c)", pid, state)
			}
		}
	}
	if _, groups := cgroup.ServerDirs(cgroup.Detect(), instance.Self()); len(groups) > 0 {
		t.Errorf("leaked cgroups: %v", groups)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), "/run/codexec-"+pid) {
		t.Errorf("leaked staging mounts")
	}
	if after := CountFDs(t); after > fdsBefore+2 {
		t.Errorf("descriptors: %d before, %d after", fdsBefore, after)
	}
}
