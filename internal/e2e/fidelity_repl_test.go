package e2e

import (
	"strings"
	"testing"
)

// Code mode and sessions in the fidelity battery. Both are compared with a
// cold run of the probe, except where they differ by design: code mode runs
// the code as the body of a function (so that `return` gives the result)
// and a session is a REPL whose state outlives a call.
var (
	codeModeWraps = "code mode runs the code as the body of a function, so that return gives the result; its names are the function's locals"
	replSession   = "a session is a REPL: state outlives each call, __main__ is the session's namespace, and there is no program command line"
	// Packages can be installed into one session.
	sessionEnv = "a session's HOME is its own directory, and PYTHONPATH and NODE_PATH start with its own package directory (packages installed into the session)"
)

// replCompared are the probe keys (or key prefixes, ending in ".") a code
// mode run or a session must share with a fresh interpreter: the process's
// environment, limits and security state, python's flags, warnings, gc and
// output streams, node's output streams and the per-run randomness. The
// rest differs by design (codeModeWraps, replSession).
var replCompared = []string{
	"env", "umask", "rlimits", "limits", "ids", "nice", "executable", "execPath", "prefix", "flags.", "fsencoding",
	"warnings", "warnoptions", "xoptions", "gc", "recursionlimit", "switchinterval",
	"status.SigBlk", "status.SigIgn", "status.NoNewPrivs", "status.Seccomp", "status.CapEff", "status.CapBnd",
	"stdout.", "stderr.",
}

func replKeyCompared(key string) bool {
	for _, k := range replCompared {
		if key == k || strings.HasSuffix(k, ".") && strings.HasPrefix(key, k) {
			return true
		}
	}
	return false
}

// fidelityREPLPaths lists the code mode and session paths (their servers
// are the default ones, as they are not served by warm runners).
func fidelityREPLPaths() []fidelityPath {
	return []fidelityPath{
		{name: "python/codemode", server: fidCold, lang: "python", probe: "probe.py", via: "codemode"},
		{name: "node/codemode", server: fidCold, lang: "node", probe: "probe.js", via: "codemode"},
		{name: "python/session", server: fidCold, lang: "python", probe: "probe.py", via: "session", allowed: map[string]string{"env": sessionEnv}},
		{name: "node/session", server: fidCold, lang: "node", probe: "probe.js", via: "session", allowed: map[string]string{"env": sessionEnv}},
	}
}

// runREPL runs args' code in code mode (with a context) or in a new
// session, and returns what it printed as stdout.
func runREPL(t *testing.T, s *server, p fidelityPath, args map[string]any) execResult {
	t.Helper()
	if p.via == "codemode" {
		var r codeModeResult
		res := s.callInto("execute_code", map[string]any{"language": p.lang, "code": args["code"], "context": map[string]any{"fidelity": 1}}, &r)
		if res.IsError {
			t.Fatalf("code mode: %s", text(res))
		}
		r.execResult.Stdout = strings.Join(r.Logs, "\n")
		return r.execResult
	}
	sess := s.startSession(p.lang)
	defer s.call("close_session", map[string]any{"session_id": sess.SessionID})
	// A session's stdin is its driver's channel: the probe must not read it
	// (it looks for a name fidelity, as code mode binds from its context).
	def := map[string]string{"python": "fidelity = 1\n", "node": "var fidelity = 1;\n"}[p.lang]
	r, isErr := s.send(sess.SessionID, def+args["code"].(string), nil)
	if isErr {
		t.Fatalf("send_to_session: %+v", r)
	}
	return r
}
