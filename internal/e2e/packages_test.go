package e2e

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/packages/packagestest"
)

// installOut mirrors install_package's structured output.
type installOut struct {
	Success       bool   `json:"success"`
	Package       string `json:"package"`
	Version       string `json:"version"`
	Language      string `json:"language"`
	SessionID     string `json:"session_id"`
	InstallOutput string `json:"install_output"`
	Error         string `json:"error"`
}

// demoIndex serves two versions of the pure-python wheel codexec-demo.
func demoIndex(t *testing.T) *packagestest.Index {
	t.Helper()
	ix, err := packagestest.NewIndex(
		packagestest.Dist{Name: "codexec-demo", Version: "1.0.0", Files: map[string]string{"codexec_demo/__init__.py": "VALUE = 'one'\n"}},
		packagestest.Dist{Name: "codexec-demo", Version: "2.0.0", Files: map[string]string{"codexec_demo/__init__.py": "VALUE = 'two'\n"}},
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	return ix
}

// startPackages starts a server whose pip uses only ix and whose installers
// get this machine's installer settings (CA bundle, proxy), as an operator's
// server would.
func startPackages(t *testing.T, ix *packagestest.Index, env ...string) *server {
	t.Helper()
	var base []string
	for _, kv := range packages.SelectEnv(os.Environ()) {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "LANG", "PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL":
		default:
			base = append(base, kv)
		}
	}
	if ix != nil {
		base = append(base, "CODEXEC_PIP_INDEX_URL="+ix.URL())
	}
	return start(t, append(base, env...)...)
}

func (s *server) install(args map[string]any) (installOut, *mcp.CallToolResult) {
	s.t.Helper()
	var o installOut
	res := s.call("install_package", args)
	if !res.IsError {
		decodeStructured(s.t, res, &o)
	}
	return o, res
}

func TestPackagesGlobalPythonVisibleToNewRuns(t *testing.T) {
	ix := demoIndex(t)
	s := startPackages(t, ix)
	for _, c := range []struct{ pkg, version, value string }{
		{"codexec-demo==1.0.0", "1.0.0", "one"},
		{"codexec_demo>=2", "2.0.0", "two"},
	} {
		o, res := s.install(map[string]any{"package": c.pkg, "language": "python"})
		if res.IsError || !o.Success || o.Version != c.version || o.Package == "" || o.SessionID != "" {
			t.Fatalf("%s: %+v %s", c.pkg, o, text(res))
		}
		if !strings.Contains(o.InstallOutput, "Successfully installed") {
			t.Errorf("install_output %q", o.InstallOutput)
		}
		r, _ := s.exec(map[string]any{"language": "python", "code": "import codexec_demo; print(codexec_demo.VALUE)"})
		if r.Status != "success" || r.Stdout != c.value+"\n" {
			t.Fatalf("after %s: %+v", c.pkg, r)
		}
	}
}

func TestPackagesGlobalNodeVisibleToNewRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("reaches the npm registry")
	}
	s := startPackages(t, nil)
	o, res := s.install(map[string]any{"package": "is-number@7", "language": "javascript"})
	if res.IsError || !o.Success || o.Version != "7.0.0" || o.Package != "is-number" || o.Language != "node" {
		t.Fatalf("%+v %s", o, text(res))
	}
	for _, c := range []struct{ lang, code string }{
		{"node", "console.log(require('is-number')(5), require('is-number')('x'))"},
		{"typescript", "import isNumber from 'is-number'; const n: number = 5; console.log(isNumber(n), isNumber('x'))"},
	} {
		r, _ := s.exec(map[string]any{"language": c.lang, "code": c.code})
		if r.Status != "success" || r.Stdout != "true false\n" {
			t.Errorf("%s: %+v", c.lang, r)
		}
	}
	// The installer's CA settings never reach sandboxed code.
	r, _ := s.exec(map[string]any{"language": "node", "code": "console.log(Object.keys(process.env).filter(k => /CERT|PROXY|npm_config|PIP/i.test(k)).join(','))"})
	if r.Status != "success" || strings.TrimSpace(r.Stdout) != "" {
		t.Errorf("installer variables leaked into the sandbox: %+v", r)
	}
}

func TestPackagesFailedInstallIsAResult(t *testing.T) {
	ix := demoIndex(t)
	s := startPackages(t, ix)
	o, res := s.install(map[string]any{"package": "codexec-no-such-package", "language": "python"})
	if res.IsError || o.Success || o.Version != "" || o.Error == "" || !strings.Contains(o.InstallOutput, "No matching distribution") {
		t.Fatalf("%+v %s", o, text(res))
	}
}

func TestPackagesRejectedNothingRuns(t *testing.T) {
	ix := demoIndex(t)
	s := startPackages(t, ix, "CODEXEC_PACKAGE_BLOCKLIST=Codexec.Demo, node:is-number")
	// A blocked package is a normal result with success false and the reason.
	for _, c := range []struct{ lang, pkg string }{{"python", "codexec_demo==1.0.0"}, {"python", "CODEXEC-DEMO"}, {"node", "is-number@7"}} {
		o, res := s.install(map[string]any{"package": c.pkg, "language": c.lang})
		if res.IsError || o.Success || !strings.Contains(o.Error, "blocked") {
			t.Errorf("%s %q: isError=%v %+v %s", c.lang, c.pkg, res.IsError, o, text(res))
		}
	}
	cases := []struct{ lang, pkg, want string }{
		{"python", "foo; rm -rf /", "whitespace"},
		{"python", "foo;rm", "not a valid python package name"},
		{"python", "--index-url=http://127.0.0.1:1/simple", "not a valid python package name"},
		{"python", "https://127.0.0.1:1/x.whl", "not a valid"},
		{"python", "/tmp/pkg", "not a valid"},
		{"python", "git+https://127.0.0.1:1/x.git", "not a valid"},
		{"node", "--global", "not a valid npm package name"},
		{"node", "lodash@git+ssh://127.0.0.1/x", "invalid npm version"},
		{"node", "../evil", "not a valid npm package name"},
		{"ruby", "rails", "python (pip) or node (npm)"},
		{"python", "", "empty"},
	}
	for _, c := range cases {
		_, res := s.install(map[string]any{"package": c.pkg, "language": c.lang})
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %q: isError=%v %s", c.lang, c.pkg, res.IsError, text(res))
		}
	}
	_, res := s.install(map[string]any{"package": "pandas", "language": "python", "session_id": "sess_nope"})
	if !res.IsError || !strings.Contains(text(res), "SESSION_NOT_FOUND") {
		t.Errorf("session install: %s", text(res))
	}
	if ix.Requests() != 0 {
		t.Errorf("the index saw %d requests", ix.Requests())
	}
	for _, d := range []string{"python", "node/node_modules"} {
		ents, err := os.ReadDir(filepath.Join(s.DataDir, "packages", d))
		if err != nil || len(ents) != 0 {
			t.Errorf("packages/%s: %v %v", d, ents, err)
		}
	}
	if _, err := os.Stat(filepath.Join(s.DataDir, "packages", "node", "package.json")); !os.IsNotExist(err) {
		t.Errorf("npm ran: %v", err)
	}
}

// TestPackagesDefaultBlocklist: with no CODEXEC_PACKAGE_BLOCKLIST the shipped
// list of known-malicious packages applies (the examples, including
// the version-specific event-stream@3.3.6): success false with the reason,
// nothing installed, no registry contacted. CODEXEC_PACKAGE_BLOCKLIST_EXTRA
// extends it.
func TestPackagesDefaultBlocklist(t *testing.T) {
	ix := demoIndex(t)
	s := startPackages(t, ix, "CODEXEC_PACKAGE_BLOCKLIST_EXTRA=codexec-demo==1.0.0", "CODEXEC_NPM_REGISTRY=http://127.0.0.1:1/")
	for _, c := range []struct{ lang, pkg string }{
		{"node", "crossenv"}, {"node", "event-stream@3.3.6"}, {"python", "python3-dateutil"}, {"python", "jeIlyfish"},
		{"python", "colourama"}, {"python", "codexec-demo==1.0.0"},
	} {
		o, res := s.install(map[string]any{"package": c.pkg, "language": c.lang})
		if res.IsError || o.Success || !strings.Contains(o.Error, "blocked") || o.Version != "" {
			t.Errorf("%s %q: isError=%v %+v %s", c.lang, c.pkg, res.IsError, o, text(res))
		}
	}
	if ix.Requests() != 0 {
		t.Errorf("the index saw %d requests for blocked packages", ix.Requests())
	}
	for _, d := range []string{"python", "node/node_modules"} {
		if ents, err := os.ReadDir(filepath.Join(s.DataDir, "packages", d)); err != nil || len(ents) != 0 {
			t.Errorf("packages/%s: %v %v", d, ents, err)
		}
	}
	// Another version of an extension entry installs.
	if o, res := s.install(map[string]any{"package": "codexec-demo==2.0.0", "language": "python"}); res.IsError || !o.Success {
		t.Fatalf("codexec-demo 2.0.0: %+v %s", o, text(res))
	}
}

func TestPackagesSandboxStillHasNoNetwork(t *testing.T) {
	ix := demoIndex(t)
	s := startPackages(t, ix)
	o, res := s.install(map[string]any{"package": "codexec-demo", "language": "python"})
	if res.IsError || !o.Success {
		t.Fatalf("%+v %s", o, text(res))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	code := fmt.Sprintf("import codexec_demo, socket\ns = socket.socket()\ns.settimeout(3)\ntry:\n    s.connect(('127.0.0.1', %d))\n    print('connected')\nexcept OSError as e:\n    print('blocked', e)\nprint(codexec_demo.VALUE)", port)
	r, _ := s.exec(map[string]any{"language": "python", "code": code})
	if r.Status != "success" || !strings.HasSuffix(r.Stdout, "two\n") {
		t.Fatalf("%+v", r)
	}
	if s.sandboxMode(r.ExecutionID) == "subprocess" {
		t.Skip("subprocess mode does not isolate the network (package import verified; run with CODEXEC_TEST_SANDBOX_MODE=namespace or docker)")
	}
	if !strings.HasPrefix(r.Stdout, "blocked") {
		t.Fatalf("sandboxed code reached the host network after an install: %q", r.Stdout)
	}
}

func TestPackagesToolAnnotations(t *testing.T) {
	sameInEveryMode(t, "a schema test")
	s := startPackages(t, nil)
	tools, err := s.Session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name != "install_package" {
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint || a.DestructiveHint == nil || !*a.DestructiveHint {
			t.Fatalf("annotations %+v", a)
		}
		return
	}
	t.Fatal("install_package not listed")
}

// TestPackagesIntoRunningSession installs into live python and node
// sessions: the running interpreters import the new packages without a
// restart, list_sessions reports them, the session log records the install,
// and one-shot runs (global environment) do not see them.
func TestPackagesIntoRunningSession(t *testing.T) {
	if testing.Short() {
		t.Skip("npm registry install skipped in -short mode")
	}
	ix := demoIndex(t)
	s := startPackages(t, ix)
	py := s.startSession("python")
	if r, _ := s.send(py.SessionID, "import codexec_demo", nil); r.Status != "execution_error" {
		t.Fatalf("package present before install: %+v", r)
	}
	if o, res := s.install(map[string]any{"package": "codexec-demo==1.0.0", "language": "python", "session_id": py.SessionID}); res.IsError || !o.Success {
		t.Fatalf("install: %+v %s", o, text(res))
	}
	if r, _ := s.send(py.SessionID, "import codexec_demo\ncodexec_demo.VALUE", nil); r.Stdout != "'one'\n" {
		t.Fatalf("session import after install: %+v", r)
	}
	js := s.startSession("node")
	if o, res := s.install(map[string]any{"package": "is-number@7", "language": "node", "session_id": js.SessionID}); res.IsError || !o.Success || o.Version != "7.0.0" {
		t.Fatalf("npm install: %+v %s", o, text(res))
	}
	if r, _ := s.send(js.SessionID, "require('is-number')(5)", nil); r.Stdout != "true\n" {
		t.Fatalf("session require after install: %+v", r)
	}
	var list struct {
		Sessions []struct {
			SessionID         string   `json:"session_id"`
			PackagesInstalled []string `json:"packages_installed"`
		} `json:"sessions"`
	}
	s.callInto("list_sessions", map[string]any{}, &list)
	for _, e := range list.Sessions {
		want := map[string]string{py.SessionID: "codexec-demo", js.SessionID: "is-number"}[e.SessionID]
		if len(e.PackagesInstalled) != 1 || e.PackagesInstalled[0] != want {
			t.Errorf("session %s packages %v, want [%s]", e.SessionID, e.PackagesInstalled, want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(s.DataDir, "logs", "session-"+py.SessionID+".jsonl"))
	if !strings.Contains(string(b), `"type":"package_install"`) || !strings.Contains(string(b), `"version":"1.0.0"`) {
		t.Errorf("no package_install entry: %s", b)
	}
	if r, _ := s.exec(map[string]any{"language": "python", "code": "import codexec_demo"}); r.Status != "execution_error" {
		t.Errorf("a session install leaked into the global environment: %+v", r)
	}
}
