package packages_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/packages/packagestest"
)

func hostPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "/usr/local/bin/python3"} {
		if out, err := exec.Command(p, "-m", "pip", "--version").CombinedOutput(); err == nil && strings.HasPrefix(string(out), "pip ") {
			return p
		}
	}
	t.Skip("no host python3 with pip (apt-get install python3-pip)")
	return ""
}

func testIndex(t *testing.T) *packagestest.Index {
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

func installerEnv() []string {
	env := packages.SelectEnv(os.Environ())
	// The operator's find-links would add a second source; the test index is the only one.
	out := env[:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PIP_FIND_LINKS=") && !strings.HasPrefix(kv, "PIP_INDEX_URL=") && !strings.HasPrefix(kv, "PIP_EXTRA_INDEX_URL=") {
			out = append(out, kv)
		}
	}
	return out
}

func TestInstallPipFromLocalIndex(t *testing.T) {
	py := hostPython(t)
	ix := testIndex(t)
	dir := t.TempDir()
	in := packages.New(packages.Options{Python: py, Env: installerEnv(), PipIndexURL: ix.URL(), Timeout: 2 * time.Minute})
	cases := []struct{ pkg, want string }{
		{"codexec-demo==1.0.0", "1.0.0"},
		{"Codexec_Demo", "2.0.0"}, // latest; replaces the installed 1.0.0
		{"codexec.demo<2", "1.0.0"},
	}
	for _, c := range cases {
		res, err := in.Install(context.Background(), packages.Request{Language: packages.Python, Package: c.pkg, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || res.Version != c.want {
			t.Fatalf("%s: %+v", c.pkg, res)
		}
		if !strings.Contains(strings.ToLower(res.Output), "successfully installed") || !strings.Contains(res.Output, c.want) {
			t.Errorf("%s: output %q", c.pkg, res.Output)
		}
		if infos, _ := filepath.Glob(filepath.Join(dir, "*.dist-info")); len(infos) != 1 {
			t.Errorf("%s: dist-info dirs %v, want exactly one", c.pkg, infos)
		}
		cmd := exec.Command(py, "-c", "import codexec_demo; print(codexec_demo.VALUE)")
		cmd.Env = []string{"PYTHONPATH=" + dir}
		got, err := cmd.CombinedOutput()
		want := map[string]string{"1.0.0": "one\n", "2.0.0": "two\n"}[c.want]
		if err != nil || string(got) != want {
			t.Errorf("%s: import gives %q, %v; want %q", c.pkg, got, err, want)
		}
	}
}

func TestInstallPipNotFoundIsAFailedResult(t *testing.T) {
	py := hostPython(t)
	ix := testIndex(t)
	in := packages.New(packages.Options{Python: py, Env: installerEnv(), PipIndexURL: ix.URL(), Timeout: time.Minute})
	res, err := in.Install(context.Background(), packages.Request{Language: packages.Python, Package: "codexec-no-such-package", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || res.Version != "" || res.Error == "" || !strings.Contains(res.Output, "No matching distribution") {
		t.Fatalf("got %+v", res)
	}
}

func TestInstallRejectsBeforeRunning(t *testing.T) {
	ix := testIndex(t)
	bl, err := packages.ParseBlocklist([]string{"codexec-demo"})
	if err != nil {
		t.Fatal(err)
	}
	// Python and NPM point at a program that must never run.
	trap := filepath.Join(t.TempDir(), "ran")
	in := packages.New(packages.Options{Python: "/bin/touch-" + trap, NPM: "/bin/touch-" + trap, PipIndexURL: ix.URL(), Blocklist: bl})
	dir := filepath.Join(t.TempDir(), "target")
	for _, c := range []struct{ lang, pkg string }{
		{packages.Python, "codexec_demo==1.0.0"}, {packages.Python, "foo; touch /tmp/x"}, {packages.Node, "--global"},
		{packages.Python, "--index-url=http://127.0.0.1:1/"}, {packages.Node, "git+https://example.invalid/x.git"},
	} {
		if _, err := in.Install(context.Background(), packages.Request{Language: c.lang, Package: c.pkg, Dir: dir}); err == nil {
			t.Errorf("%s %q accepted", c.lang, c.pkg)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("target directory was created: %v", err)
	}
	if ix.Requests() != 0 {
		t.Errorf("index saw %d requests", ix.Requests())
	}
}

func TestInstallNPMFromRegistry(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm not installed")
	}
	if testing.Short() {
		t.Skip("reaches the npm registry")
	}
	dir := t.TempDir()
	in := packages.New(packages.Options{NPM: npm, Env: packages.SelectEnv(os.Environ()), Timeout: 2 * time.Minute})
	for _, c := range []struct{ pkg, want string }{{"is-number@6", "6.0.0"}, {"is-number@^7.0.0", "7.0.0"}} {
		res, err := in.Install(context.Background(), packages.Request{Language: packages.Node, Package: c.pkg, Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Success || res.Version != c.want {
			t.Fatalf("%s: %+v", c.pkg, res)
		}
	}
	node, _ := exec.LookPath("node")
	cmd := exec.Command(node, "-e", "console.log(require('is-number')(5))")
	cmd.Env = []string{"NODE_PATH=" + filepath.Join(dir, "node_modules")}
	if out, err := cmd.CombinedOutput(); err != nil || string(out) != "true\n" {
		t.Fatalf("require: %q %v", out, err)
	}
}

func TestInstallConcurrentSameDirSerialized(t *testing.T) {
	py := hostPython(t)
	ix := testIndex(t)
	dir := t.TempDir()
	in := packages.New(packages.Options{Python: py, Env: installerEnv(), PipIndexURL: ix.URL(), Timeout: 2 * time.Minute})
	specs := []string{"codexec-demo==1.0.0", "codexec-demo==2.0.0", "codexec-demo==1.0.0"}
	results := make([]packages.Result, len(specs))
	errs := make([]error, len(specs))
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = in.Install(context.Background(), packages.Request{Language: packages.Python, Package: s, Dir: dir})
		}()
	}
	wg.Wait()
	for i := range specs {
		if errs[i] != nil || !results[i].Success {
			t.Fatalf("%s: %v %+v", specs[i], errs[i], results[i])
		}
	}
	if infos, _ := filepath.Glob(filepath.Join(dir, "*.dist-info")); len(infos) != 1 {
		t.Errorf("dist-info dirs %v, want exactly one", infos)
	}
}

func TestInstallTimeoutKillsInstaller(t *testing.T) {
	// A "python" that never finishes stands in for a hung installer.
	fake := filepath.Join(t.TempDir(), "python")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\nsleep 60 &\nsleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := packages.New(packages.Options{Python: fake, Env: []string{"PATH=/usr/bin:/bin"}, Timeout: 500 * time.Millisecond})
	start := time.Now()
	res, err := in.Install(context.Background(), packages.Request{Language: packages.Python, Package: "anything", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Success || !strings.Contains(res.Error, "timed out") || time.Since(start) > 10*time.Second {
		t.Fatalf("%+v after %v", res, time.Since(start))
	}
}
