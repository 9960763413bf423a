package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fidelityExit is a program whose ending the battery compares: exit code,
// status, stdout and stderr must be a cold interpreter's on every path.
type fidelityExit struct {
	name, lang, code string
	// known: paths that end differently, with the reason (docs/fidelity.md).
	known map[fidelityServer]string
}

// selfSignal: a forked python run is pid 1 of its own pid namespace, and the
// kernel drops signals that pid 1 sends itself (or gets from inside its
// namespace) while their action is the default. An init process per forked
// run fixes it but costs ~1.5x a forked run's CPU (docs/fidelity.md).
// shellJob: docker mode's warm node runner is a job of the container's
// shell, which reports a job killed by a signal.
var shellJob = map[fidelityServer]string{fidWarm: "docker mode: a warm node runner is a background job of the container's shell, which writes \"Terminated\" to stderr when the job dies by SIGTERM"}

var selfSignal = map[fidelityServer]string{fidFork: "a forked python run is pid 1 of its pid namespace: a signal it sends itself with the default action (SIGTERM, or the SIGINT after an uncaught KeyboardInterrupt) is dropped by the kernel, so it exits 0 or 1 instead of dying by the signal"}

var fidelityExits = []fidelityExit{
	{"sys.exit(3)", "python", "import sys; print('out'); sys.exit(3)", nil},
	{"sys.exit(message)", "python", "import sys; sys.exit('bye')", nil},
	{"uncaught exception", "python", "def f():\n    raise ValueError('boom')\nf()", nil},
	{"KeyboardInterrupt", "python", "raise KeyboardInterrupt", selfSignal},
	{"killed by SIGTERM", "python", "import os, signal; print('before', flush=True); os.kill(os.getpid(), signal.SIGTERM)", selfSignal},
	{"os._exit", "python", "import os; print('lost'); os._exit(7)", nil},
	{"atexit runs after the code", "python", "import atexit; atexit.register(print, 'atexit ran'); print('main')", nil},
	{"threads joined at exit", "python", "import threading, time\nthreading.Thread(target=lambda: (time.sleep(0.05), print('thread done'))).start()\nprint('main')", nil},
	{"stdout flushed at exit", "python", "import sys; print('no newline', end=''); sys.stderr.write('err')", nil},
	{"reconfigure stdout", "python", "import sys; sys.stdout.reconfigure(encoding='utf-8', errors='replace'); print('ok ✓')", nil},
	{"process.exit(3)", "node", "console.log('out'); process.exit(3)", nil},
	{"uncaught error", "node", "function f() { throw new Error('boom') }\nf()", nil},
	{"unhandled rejection", "node", "Promise.reject(new Error('rejected'))", nil},
	{"killed by SIGTERM", "node", "process.kill(process.pid, 'SIGTERM')", shellJob},
	{"exitCode", "node", "process.exitCode = 4; console.log('set')", nil},
	{"exit listeners and timers", "node", "process.on('exit', (c) => console.log('exit', c)); setTimeout(() => console.log('timer'), 50); console.log('main')", nil},
	{"exit 3", "bash", "echo out; exit 3", nil},
	{"last status", "bash", "echo out; false", nil},
	{"killed by SIGTERM", "bash", "echo before; kill -TERM $$", nil},
	{"EXIT trap", "bash", "trap 'echo trapped' EXIT; echo main", nil},
	{"syntax error", "bash", "if then", nil},
}

// exitOutcome is what the battery compares of a run's end.
type exitOutcome struct {
	ExitCode       *int
	Status, Stdout string
	Stderr         string
}

// checkFidelityExits runs every exit program on the cold server and on each
// warm path of its language, and compares the outcomes.
func checkFidelityExits(t *testing.T, servers map[fidelityServer]*server, mode string) {
	for _, c := range fidelityExits {
		t.Run("exit/"+c.lang+"/"+c.name, func(t *testing.T) {
			cold := servers[fidCold]
			want := exitOf(cold, runOnPath(t, cold, fidelityPath{name: "cold", server: fidCold, lang: c.lang, via: "exec"}, map[string]any{"language": c.lang, "code": c.code}))
			paths := []fidelityServer{fidWarm}
			if c.lang == "bash" && mode == "docker" {
				paths = nil // docker mode has no warm bash runners
			}
			if c.lang == "python" && mode == "namespace" {
				paths = append(paths, fidFork)
			}
			for _, p := range paths {
				// A known difference of docker mode only is compared elsewhere.
				if why := c.known[p]; why != "" && (mode == "docker" || !strings.HasPrefix(why, "docker mode")) {
					t.Logf("%s: known difference, not compared: %s", p, why)
					continue
				}
				s := servers[p]
				fp := fidelityPath{name: string(p), server: p, lang: c.lang, via: "exec"}
				got := exitOf(s, runOnPath(t, s, fp, map[string]any{"language": c.lang, "code": c.code}))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s run ends unlike a cold one (-cold +%s):\n%s", p, p, diff)
				}
			}
		})
	}
}

func exitOf(s *server, r execResult) exitOutcome {
	return exitOutcome{ExitCode: r.ExitCode, Status: r.Status, Stdout: normalizeProbe(s, r.Stdout), Stderr: withoutEvalFrames(normalizeProbe(s, r.Stderr))}
}

// evalFrameRE matches the stack frames between a node program's code and
// node itself that differ by design: a warm runner evaluates the code with
// vm.runInThisContext from its own script (node:vm, node:codexec/runner),
// where node -e calls it from evalScript (docs/fidelity.md). The code's own
// frames, the message and the exit code must still match.
var evalFrameRE = regexp.MustCompile(`(?m)^    at .*(node:vm:|node:codexec/runner|evalScript|node:internal/main/eval_string|runScriptInThisContext|node:internal/process/execution|\[eval\]-wrapper).*\n`)

func withoutEvalFrames(stderr string) string {
	return evalFrameRE.ReplaceAllString(stderr, "")
}
