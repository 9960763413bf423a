package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pooledBackend is a backend with warm runners.
type pooledBackend interface {
	Backend
	Pooled
	Prewarm(Spec)
	AwaitWarm(kind string, d time.Duration) (PoolStat, bool)
}

// warmCase is one run of testWarmSemantics and what it must give.
type warmCase struct {
	name, code, stdin string
	args              []string
	want              runResult
}

// warmCases are the semantics checks for runners of kind, run in dir (the
// program sees it as ws) as user uid. Runs go in order: a file written by
// one is listed by a later one.
func warmCases(kind, dir, ws string, uid int) []warmCase {
	if kind == WarmNode {
		return []warmCase{
			{name: "output", code: "console.log('out'); console.error('err')", want: runResult{stdout: "out\n", stderr: "err\n"}},
			{name: "exit status", code: "process.exitCode = 3", want: runResult{exit: Exit{Code: 3}}},
			{name: "process.exit", code: "console.log('a'); process.exit(5)", want: runResult{stdout: "a\n", exit: Exit{Code: 5}}},
			{name: "stdin", code: "console.log(require('fs').readFileSync(0, 'utf8').toUpperCase())", stdin: "abc", want: runResult{stdout: "ABC\n"}},
			{name: "arguments", code: "console.log(process.argv.slice(1).join())", args: []string{"a", dir + "/f"},
				want: runResult{stdout: "a," + ws + "/f\n"}},
			{name: "workspace, cwd, home, user", code: "require('fs').writeFileSync('made', 'x'); console.log(process.cwd(), process.env.HOME, process.getuid(), require('fs').readdirSync('.').join())",
				want: runResult{stdout: fmt.Sprintf("%s %s %d made\n", ws, ws, uid)}},
			{name: "late output", code: "setTimeout(() => console.log('later'), 100)", want: runResult{stdout: "later\n"}},
		}
	}
	return []warmCase{
		{name: "output", code: "import sys; print('out'); print('err', file=sys.stderr)",
			want: runResult{stdout: "out\n", stderr: "err\n"}},
		{name: "exit status", code: "import sys; sys.exit(3)", want: runResult{exit: Exit{Code: 3}}},
		{name: "exit status above 128", code: "import sys; sys.exit(137)", want: runResult{exit: Exit{Code: 137}}},
		{name: "os._exit", code: "import os, sys; sys.stdout.flush(); os._exit(7)", want: runResult{exit: Exit{Code: 7}}},
		{name: "stdin", code: "import sys; print(sys.stdin.read().upper())", stdin: "abc",
			want: runResult{stdout: "ABC\n"}},
		{name: "no stdin", code: "import sys; print(repr(sys.stdin.read()))", want: runResult{stdout: "''\n"}},
		{name: "signals as in a fresh interpreter", code: "import signal as s; print(s.getsignal(s.SIGINT) is s.default_int_handler, s.getsignal(s.SIGQUIT) == s.SIG_DFL)",
			want: runResult{stdout: "True True\n"}},
		{name: "arguments", code: "import sys; print(sys.argv[1:])", args: []string{"a", dir + "/f"},
			want: runResult{stdout: fmt.Sprintf("['a', '%s/f']\n", ws)}},
		{name: "workspace, cwd, home, user", code: "import os; open('made', 'w').write('x'); print(os.getcwd(), os.environ['HOME'], os.getuid(), 'PATH' in os.environ)",
			want: runResult{stdout: fmt.Sprintf("%s %s %d True\n", ws, ws, uid)}},
		// The status socket at 1023 is the only one (python_run.py).
		{name: "no control socket left", code: "import os; print(sorted(os.listdir('.')), [f for f in os.listdir('/proc/self/fd') if os.path.exists('/proc/self/fd/' + f) and os.readlink('/proc/self/fd/' + f).startswith('socket:')])",
			want: runResult{stdout: "['made'] ['1023']\n"}},
	}
}

// testWarmSemantics checks that runs of kind (WarmPython, WarmNode) served
// by b's warm runners keep the semantics of cold ones: output, exit status,
// stdin, arguments, the workspace dir (seen by the program as ws),
// environment, user (uid) and kills; each run must be served warm.
func testWarmSemantics(t *testing.T, b pooledBackend, kind, dir, ws string, uid int) {
	for _, tc := range warmCases(kind, dir, ws, uid) {
		t.Run(tc.name, func(t *testing.T) {
			b.Prewarm(warmSpec(kind, dir, ""))
			if _, ok := b.AwaitWarm(kind, 20*time.Second); !ok {
				t.Fatal("no warm runner became ready")
			}
			hits := poolHits(b)
			spec := warmSpec(kind, dir, tc.code, tc.args...)
			spec.Env = append(spec.Env, "HOME="+dir)
			if tc.stdin != "" {
				spec.Stdin = strings.NewReader(tc.stdin)
			}
			got := runSpec(t, b, spec)
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if poolHits(b) != hits+1 {
				t.Errorf("the run was not served warm")
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("file written in the workspace: %v", err)
	}
	if kind == WarmNode {
		t.Run("uncaught error", func(t *testing.T) {
			b.AwaitWarm(kind, 20*time.Second)
			got := runSpec(t, b, warmSpec(kind, dir, "throw new Error('boom')"))
			if got.exit.Code != 1 || !strings.Contains(got.stderr, "Error: boom") {
				t.Errorf("got %+v", got)
			}
		})
	}
	t.Run("kill", func(t *testing.T) { testWarmKill(t, b, kind, dir) })
}

func testWarmKill(t *testing.T, b pooledBackend, kind, dir string) {
	b.AwaitWarm(kind, 20*time.Second)
	hits := poolHits(b)
	code := "import time; time.sleep(60)"
	if kind == WarmNode {
		code = "setTimeout(() => {}, 60000)"
	}
	p, err := b.Start(context.Background(), warmSpec(kind, dir, code))
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
	if poolHits(b) != hits+1 {
		t.Errorf("the run was not served warm")
	}
}

// poolHits is how many runs b's warm runners served.
func poolHits(b Pooled) uint64 {
	var n uint64
	for _, s := range b.PoolStats() {
		n += s.Hits
	}
	return n
}
