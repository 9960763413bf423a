package e2e

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The fidelity battery: the same probe programs (testdata/fidelity) run
// through every path a run can take and are compared with the same probe
// run by a new interpreter started cold in the same sandbox (a server with
// CODEXEC_POOL_SIZE=0). A path may differ from the cold run only where the
// difference is listed below with its reason; docs/fidelity.md lists the
// same. Each probe runs twice per path, first with the stdin argument, then
// without (EOF): what must differ per run (hash seed, random state, pids)
// is checked to differ, everything else to be equal.

// fidelityServer is one server configuration of a path.
type fidelityServer string

const (
	fidCold fidelityServer = "cold"   // CODEXEC_POOL_SIZE=0: every run starts its interpreter
	fidWarm fidelityServer = "warm"   // CODEXEC_POOL_FORK=off: whole-interpreter warm runners
	fidFork fidelityServer = "forked" // the default: python runs forked from a fork-server (namespace mode)
)

// fidelityPath is one way a run reaches an interpreter.
type fidelityPath struct {
	name   string
	server fidelityServer
	lang   string // execute_code's language
	probe  string // probe file (testdata/fidelity)
	// via: "exec" (execute_code) or "script" (save_script + run_script).
	via string
	// allowed lists the probe keys that may differ from the cold run, each
	// with the reason (docs/fidelity.md says the same).
	allowed map[string]string
}

// Differences by design. Every other key must match the cold run.
var (
	// A python run forked from the fork-server shares its hash seed: str
	// hashes are computed once and cached in every string and dict of the
	// interpreter, so they cannot be reseeded after start-up.
	sharedHashSeed = "forked python runs share the fork-server's hash seed (str hashes are cached in every string and dict the fork-server built; CPython cannot reseed after start-up)"

	// The python stubs register their exit callback before the code runs.
	exitCallback = "a warm or forked python run's exit callback (flush stdio, report the exit status) is registered before the code, so it runs after the code's own; atexit._ncallbacks() counts it"
	// Whole-interpreter python runners report the exit status on a socket.
	statusSocket = "a warm python runner keeps a close-on-exec socket at descriptor 1023 to report the exit status on, so the server has the result while the sandbox is torn down"
	// node -e and the warm runner's vm.runInThisContext both define the
	// code's top-level functions on globalThis, but node -e leaves them out
	// of Object.keys(globalThis) (not enumerable) in some programs.
	// Docker mode's warm runners start from the container's shell.
	containerPWD        = "docker mode: a warm python run has PWD=/workspace in its environment, from the container's shell that starts the runner; a cold run has no PWD"
	nodeFIFOs           = "docker mode: node cannot take descriptors over a socket, so a warm node runner's stdin, stdout and stderr are FIFOs in its runner directory (not the run's workspace) and an exit listener reports its exit status on a fourth"
	enumerableFunctions = "a warm node run's top-level function declarations are enumerable properties of globalThis; under node -e they can be non-enumerable (same functions, same values)"
)

func fidelityPaths(mode string) []fidelityPath {
	warmPython := map[string]string{"atexit_callbacks": exitCallback, "fds.1023": statusSocket}
	warmNode := map[string]string{"globals": enumerableFunctions}
	forkedPython := map[string]string{"atexit_callbacks": exitCallback, "per_run.hash": sharedHashSeed}
	if mode == "docker" {
		warmPython["env.PWD"] = containerPWD
		warmNode = map[string]string{"globals": enumerableFunctions, "fds.0": nodeFIFOs, "fds.1": nodeFIFOs, "fds.2": nodeFIFOs, "fds.own": nodeFIFOs, "listeners": nodeFIFOs}
	}
	paths := []fidelityPath{
		{name: "python/warm", server: fidWarm, lang: "python", probe: "probe.py", via: "exec", allowed: warmPython},
		{name: "python/script-warm", server: fidWarm, lang: "python", probe: "probe.py", via: "script", allowed: warmPython},
		{name: "node/warm", server: fidWarm, lang: "node", probe: "probe.js", via: "exec", allowed: warmNode},
		{name: "typescript/warm", server: fidWarm, lang: "typescript", probe: "probe.js", via: "exec", allowed: warmNode},
	}
	if mode != "docker" { // docker mode has no warm bash runners
		paths = append(paths, fidelityPath{name: "bash/warm", server: fidWarm, lang: "bash", probe: "probe.sh", via: "exec"})
	}
	paths = append(paths, fidelityREPLPaths()...)
	if mode == "namespace" {
		paths = append(paths,
			fidelityPath{name: "python/forked", server: fidFork, lang: "python", probe: "probe.py", via: "exec",
				allowed: forkedPython},
			fidelityPath{name: "python/script-forked", server: fidFork, lang: "python", probe: "probe.py", via: "script",
				allowed: forkedPython})
	}
	return paths
}

// fidelityWarmKind is the warm runner kind a language's runs take.
func fidelityWarmKind(lang string) string {
	if lang == "typescript" {
		return "node"
	}
	return lang
}

// fidelityStdin is the stdin argument of each probe's first run.
const fidelityStdin = "line one\nline two\n"

func TestFidelityBattery(t *testing.T) {
	mode := serverMode()
	if mode == "" || mode == "auto" {
		mode = "namespace"
	}
	servers := map[fidelityServer]*server{
		fidCold: start(t, "CODEXEC_POOL_SIZE=0"),
		fidWarm: start(t, "CODEXEC_POOL_FORK=off"),
	}
	if mode == "namespace" {
		servers[fidFork] = start(t)
	}
	// The references: each language's probe in a new interpreter, through
	// execute_code and (python) run_script.
	ref := map[string][2]map[string]any{}
	for _, r := range []fidelityPath{
		{name: "python/cold", lang: "python", probe: "probe.py", via: "exec"},
		{name: "node/cold", lang: "node", probe: "probe.js", via: "exec"},
		{name: "bash/cold", lang: "bash", probe: "probe.sh", via: "exec"},
		{name: "python/script-cold", lang: "python", probe: "probe.py", via: "script"},
		{name: "typescript/cold", lang: "typescript", probe: "probe.js", via: "exec"},
	} {
		r.server = fidCold
		ref[r.lang+"/"+r.via] = runProbeTwice(t, servers[fidCold], r)
		if r.via == "exec" && r.lang != "typescript" {
			checkFreshFacts(t, r.lang, ref[r.lang+"/"+r.via][0])
		}
	}
	for _, p := range fidelityPaths(mode) {
		t.Run(p.name, func(t *testing.T) {
			s := servers[p.server]
			got := runProbeTwice(t, s, p)
			base := ref[p.lang+"/"+p.via]
			for i := range got {
				if p.via == "codemode" || p.via == "session" {
					// No stdin argument there: both runs are compared
					// with the cold run without one.
					compareProbe(t, i, p, ref[p.lang+"/exec"][1], got[i])
					continue
				}
				compareProbe(t, i, p, base[i], got[i])
			}
			checkPerRun(t, p, got)
		})
	}
	checkFidelityExits(t, servers, mode)
}

// runProbeTwice runs p's probe with the stdin argument, then without, and
// decodes both reports. Warm and forked paths are checked to have been
// served that way (server log).
func runProbeTwice(t *testing.T, s *server, p fidelityPath) [2]map[string]any {
	t.Helper()
	code, err := os.ReadFile("testdata/fidelity/" + p.probe)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]map[string]any
	for i := range out {
		args := map[string]any{"language": p.lang, "code": string(code)}
		if i == 0 && p.via == "exec" {
			args["stdin"] = fidelityStdin
		}
		r := runOnPath(t, s, p, args)
		out[i] = decodeProbe(t, p.probe, normalizeProbe(s, r.Stdout))
	}
	return out
}

// runOnPath runs args until a run takes p's path: a kind's first run
// starts its warm runners, so a warm path's run may find none ready (up to
// 20 tries, a quarter second apart).
func runOnPath(t *testing.T, s *server, p fidelityPath, args map[string]any) execResult {
	t.Helper()
	for try := 0; ; try++ {
		if p.server != fidCold && p.lang != "bash" { // warm bash runners log no "ready"
			s.awaitWarm(fidelityWarmKind(p.lang))
		}
		r := runVia(t, s, p, args)
		if p.probe != "" && r.Status != "success" { // probes must succeed; exit programs may not
			t.Fatalf("%s: %+v", p.name, r)
		}
		if p.via == "codemode" || p.via == "session" {
			return r // not served by warm runners: nothing logged to check
		}
		if servedAs(t, s, p, r.ExecutionID) || try == 20 {
			checkServedAs(t, s, p, r.ExecutionID)
			return r
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// servedAs reports whether run id took p's path.
func servedAs(t *testing.T, s *server, p fidelityPath, id string) bool {
	warm := s.servedWarm(id)
	if p.server == fidFork {
		return strings.Contains(s.Stderr.String(), `msg="warm run" id=`+id+" kind=python forked=true")
	}
	return warm == (p.server != fidCold)
}

func runVia(t *testing.T, s *server, p fidelityPath, args map[string]any) execResult {
	t.Helper()
	switch p.via {
	case "exec":
		r, res := s.exec(args)
		if res.IsError {
			t.Fatalf("execute_code: %s", text(res))
		}
		return r
	case "codemode", "session":
		return runREPL(t, s, p, args)
	}
	name := "fidelity-" + strings.ReplaceAll(p.lang, "/", "-")
	if res := s.call("save_script", map[string]any{"name": name, "language": p.lang, "code": args["code"]}); res.IsError {
		t.Fatalf("save_script: %s", text(res))
	}
	// run_script has no stdin argument: its runs get arguments instead.
	r, res := s.runScript(map[string]any{"name": name, "args": []string{"one two", "three"}})
	if res.IsError {
		t.Fatalf("run_script: %s", text(res))
	}
	return r
}

// checkServedAs fails the test when a run did not take p's path.
func checkServedAs(t *testing.T, s *server, p fidelityPath, id string) {
	t.Helper()
	warm := s.servedWarm(id)
	switch {
	case p.server == fidCold && warm:
		t.Fatalf("%s: run %s was served warm on a server without warm runners", p.name, id)
	case p.server != fidCold && !warm:
		t.Fatalf("%s: run %s was not served by a warm runner", p.name, id)
	case p.server == fidFork && !strings.Contains(s.Stderr.String(), `msg="warm run" id=`+id+" kind=python forked=true"):
		t.Skipf("%s: run %s was not forked (this kernel has no Landlock ABI 6?)", p.name, id)
	}
}

// runDirRE matches a run's own directory name.
var runDirRE = regexp.MustCompile(`exec_[0-9a-f]+`)

// runMarkRE matches the value of CODEXEC_RUN, by which subprocess mode
// finds a run's processes (it has no namespaces): one per run on every path.
// It starts with the server's name (instance.Of: pid, start time, the
// boot id's hex prefix, the pid namespace; or pid-0-unknown).
var runMarkRE = regexp.MustCompile(`[0-9]+-[0-9]+-[0-9a-z]+(-[0-9]+)?/exec_ID-[0-9]+`)

// hostnameRE matches HOSTNAME in a report: docker mode runs each run in
// its own container, named at random.
var hostnameRE = regexp.MustCompile(`HOSTNAME(": ?"|=)[0-9a-f]{12}`)

// normalizeProbe replaces what differs between servers and runs by design
// (each server's data directory, each run's directory, process marker and
// container name) with placeholders.
func normalizeProbe(s *server, out string) string {
	out = strings.ReplaceAll(out, s.DataDir, "$DATA")
	out = runDirRE.ReplaceAllString(out, "exec_ID")
	out = hostnameRE.ReplaceAllString(out, "HOSTNAME${1}CONTAINER")
	return runMarkRE.ReplaceAllString(out, "RUN")
}

// decodeProbe turns a probe's report into a map: JSON for python and node,
// "key<TAB>value" lines for bash.
func decodeProbe(t *testing.T, probe, stdout string) map[string]any {
	t.Helper()
	out := map[string]any{}
	if strings.HasSuffix(probe, ".sh") {
		for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
			k, v, _ := strings.Cut(line, "\t")
			out[k] = v
		}
		return out
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("probe output is not JSON: %v\n%s", err, stdout)
	}
	return out
}

// perRunKeys are the probe values that must differ between any two runs.
var perRunKeys = map[string][]string{
	"probe.py": {"per_run.hash", "per_run.random", "per_run.uuid4", "per_run.tempname", "per_run.secrets", "per_run.urandom"},
	"probe.js": {"perRun.random", "perRun.uuid"},
	"probe.sh": {"perrun"},
}

// compareProbe diffs one report against the cold run's, per key, leaving
// out per-run values (checkPerRun) and the keys p allows with a reason.
func compareProbe(t *testing.T, run int, p fidelityPath, want, got map[string]any) {
	t.Helper()
	w, g := flatten(want), flatten(got)
	keys := map[string]bool{}
	for k := range w {
		keys[k] = true
	}
	for k := range g {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	for _, k := range sorted {
		if isPerRun(p.probe, k) || p.allowed[k] != "" {
			continue
		}
		if (p.via == "codemode" || p.via == "session") && !replKeyCompared(k) {
			continue
		}
		if diff := cmp.Diff(w[k], g[k]); diff != "" {
			t.Errorf("run %d: %s differs from a cold interpreter's (-cold +%s):\n%s", run, k, p.name, diff)
		}
	}
}

func isPerRun(probe, key string) bool {
	for _, k := range perRunKeys[probe] {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return strings.HasSuffix(key, ".pid") || key == "per_run.pid"
}

// flatten maps "a.b" to the values of nested objects, one level deep
// (enough for the probes' groups), so a difference names its field.
func flatten(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok && k != "rlimits" && k != "handlers" {
			for k2, v2 := range sub {
				out[k+"."+k2] = v2
			}
			continue
		}
		out[k] = v
	}
	return out
}

// checkPerRun checks that per-run values differ between p's two runs
// (unless p allows them to be the same, with a reason).
func checkPerRun(t *testing.T, p fidelityPath, got [2]map[string]any) {
	t.Helper()
	a, b := flatten(got[0]), flatten(got[1])
	for _, k := range perRunKeys[p.probe] {
		if p.allowed[k] != "" {
			continue
		}
		if a[k] == nil || cmp.Equal(a[k], b[k]) {
			t.Errorf("%s: %s is %v in two runs; a fresh interpreter has its own", p.name, k, a[k])
		}
	}
}

// checkFreshFacts checks what is known of any new interpreter on the cold
// run itself, so the reference cannot drift from a fresh process: stdio on
// pipes is not seekable or a terminal, stdout is block-buffered and stderr
// line-buffered, no signal is blocked, only stdio is open, stdin is the
// stdin argument.
func checkFreshFacts(t *testing.T, lang string, r map[string]any) {
	t.Helper()
	f := flatten(r)
	var want map[string]any
	switch lang {
	case "python":
		want = map[string]any{
			"stdout.seekable": false, "stdout.isatty": false, "stdout.line_buffering": false, "stdout.reconfigure": "ok",
			"stderr.seekable": false, "stderr.line_buffering": true, "stdin.seekable": false,
			"status.SigBlk": "0000000000000000", "status.Threads": "1", "threads": 1.0,
			"stdin_text": fidelityStdin, "argv": []any{"-c"}, "name": "__main__", "atexit_callbacks": 0.0,
		}
	case "node":
		want = map[string]any{"stdout.isTTY": nil, "stdout._type": "pipe", "stdout.fd": 1.0, "status.SigBlk": "0000000000000000", "stdinText": fidelityStdin}
	case "bash":
		want = map[string]any{"stdin": strings.ReplaceAll(fidelityStdin, "\n", `\n`), "args": "0:", "zero": "bash"}
	}
	for k, v := range want {
		if diff := cmp.Diff(v, f[k]); diff != "" {
			t.Errorf("cold %s run: %s is not what a fresh interpreter has (-want +got):\n%s", lang, k, diff)
		}
	}
}
