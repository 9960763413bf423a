package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/config"
)

// bin is the codexec binary TestMain builds for the tests to spawn.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "codexec-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "codexec")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// runCLI runs the binary with args and extra environment ("K=V") on top of
// an environment without any codexec setting, so the host's own do not leak
// in; HOME is a fresh directory.
func runCLI(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = cliEnv(t, env)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%v: %v", args, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// cliEnv is the host's environment without any codexec setting, a fresh
// HOME, and env ("K=V") on top.
func cliEnv(t *testing.T, env []string) []string {
	names := map[string]bool{}
	for _, f := range config.Flags() {
		names[f.Env], names[f.Fallback] = true, true
	}
	var out []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !names[k] && k != "HOME" {
			out = append(out, kv)
		}
	}
	return append(append(out, "HOME="+t.TempDir()), env...)
}

// TestHelp: every spelling of help prints the same text on stdout and exits
// 0: the commands, one line each, then every flag with its type and
// environment variable.
func TestHelp(t *testing.T) {
	var first string
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"env", "--help"}, {"doctor", "-h"}} {
		out, errOut, code := runCLI(t, nil, args...)
		if diff := cmp.Diff([]any{0, ""}, []any{code, errOut}); diff != "" {
			t.Errorf("%v: exit code, stderr (-want +got)\n%s", args, diff)
		}
		if first == "" {
			first = out
		} else if diff := cmp.Diff(first, out); diff != "" {
			t.Errorf("%v prints another help than --help (-want +got)\n%s", args, diff)
		}
	}
	_, cmds, _ := strings.Cut(first, "\nCommands:\n")
	cmds, _, _ = strings.Cut(cmds, "\n\n")
	var listed []string
	for _, m := range regexp.MustCompile(`(?m)^  (\w+) +\S`).FindAllStringSubmatch(cmds, -1) {
		listed = append(listed, m[1])
	}
	if diff := cmp.Diff([]string{"serve", "doctor", "console", "env", "version", "help"}, listed); diff != "" {
		t.Errorf("commands listed (-want +got)\n%s", diff)
	}
	for _, want := range []string{
		"--max-output-chars int  (CODEXEC_MAX_OUTPUT_CHARS, default 10000)",
		"--sandbox-mode auto|subprocess|namespace|docker  (CODEXEC_SANDBOX_MODE, default auto)",
		"--artifact-ttl duration  (CODEXEC_ARTIFACT_TTL, default 1h)",
		"--toolsets list  (CODEXEC_TOOLSETS, default all)",
		"--repair-acls",
		"--print-dockerfile",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if n := strings.Count(first, "\n  --"); n != len(config.Flags())+3 {
		t.Errorf("help lists %d flags, want every setting's %d plus --http, --repair-acls and --print-dockerfile", n, len(config.Flags()))
	}
}

// TestVersion: version and --version print the same lines on stdout.
func TestVersion(t *testing.T) {
	shape := regexp.MustCompile(`^codexec \S+\ncommit: \S+.*\ndate: \S+\ngo: go\S+ \w+/\w+\n$`)
	var first string
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		out, errOut, code := runCLI(t, nil, args...)
		if code != 0 || errOut != "" || !shape.MatchString(out) {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit 0 and the version lines", args, code, errOut, out)
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%v: %q differs from %q", args, out, first)
		}
	}
}

// TestEnv: codexec env lists every setting once with its source: one given
// by a flag, one by the environment, the rest defaults; credentials in a
// URL are masked; CODEXEC_TOOLSETS=all lists every toolset.
func TestEnv(t *testing.T) {
	env := []string{"CODEXEC_MAX_OUTPUT_CHARS=20000", "CODEXEC_PIP_INDEX_URL=https://u:s3cret@pypi.example/simple", "CODEXEC_TOOLSETS=all"}
	out, errOut, code := runCLI(t, env, "env", "--max-sessions", "7")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if diff := cmp.Diff([]string{"VARIABLE", "SOURCE", "VALUE"}, strings.Fields(lines[0])); diff != "" {
		t.Errorf("header (-want +got)\n%s", diff)
	}
	sources, values := map[string]string{}, map[string]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			t.Fatalf("line %q: want VARIABLE SOURCE VALUE", l)
		}
		sources[f[0]], values[f[0]] = f[1], f[2]
	}
	given := map[string]string{ // setting → source; every other one is a default
		"CODEXEC_MAX_SESSIONS": "flag", "CODEXEC_MAX_OUTPUT_CHARS": "env", "CODEXEC_PIP_INDEX_URL": "env", "CODEXEC_TOOLSETS": "env"}
	want := map[string]string{}
	for _, f := range config.Flags() {
		want[f.Env] = "default"
		if src, ok := given[f.Env]; ok {
			want[f.Env] = src
		}
	}
	if diff := cmp.Diff(want, sources); diff != "" {
		t.Errorf("sources (-want +got)\n%s", diff)
	}
	wantValues := map[string]string{"CODEXEC_MAX_SESSIONS": "7", "CODEXEC_MAX_OUTPUT_CHARS": "20000",
		"CODEXEC_PIP_INDEX_URL": "https://***@pypi.example/simple", "CODEXEC_TOOLSETS": strings.Join(config.Toolsets, ","),
		"CODEXEC_DOCKER_IMAGE": "annabelle-sandbox", "CODEXEC_NPM_REGISTRY": "(unset)"}
	for name, v := range wantValues {
		if values[name] != v {
			t.Errorf("%s = %q, want %q", name, values[name], v)
		}
	}
	if strings.Contains(out, "s3cret") {
		t.Error("env shows a credential")
	}
}

// TestEnvMasksS3Secret: the S3 secret key is shown as *** whether it came
// from CODEXEC_S3_SECRET_KEY or AWS_SECRET_ACCESS_KEY.
func TestEnvMasksS3Secret(t *testing.T) {
	store := "CODEXEC_BLOB_STORE=s3://codexec/p?endpoint=http://127.0.0.1:7070"
	for _, env := range [][]string{
		{store, "CODEXEC_S3_ACCESS_KEY=ak", "CODEXEC_S3_SECRET_KEY=topsecret"},
		{store, "AWS_ACCESS_KEY_ID=ak", "AWS_SECRET_ACCESS_KEY=topsecret"},
	} {
		out, errOut, code := runCLI(t, env, "env")
		if code != 0 || errOut != "" {
			t.Fatalf("%v: exit %d, stderr %q", env, code, errOut)
		}
		if strings.Contains(out, "topsecret") || !regexp.MustCompile(`(?m)^CODEXEC_S3_SECRET_KEY +env +\*\*\*$`).MatchString(out) {
			t.Errorf("%v: env shows\n%s", env, out)
		}
	}
}

// TestUnknownCommand: a typo is an error that says where the commands are.
func TestUnknownCommand(t *testing.T) {
	out, errOut, code := runCLI(t, nil, "serv")
	if code != 2 || out != "" || !strings.Contains(errOut, "codexec help") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 pointing at codexec help", code, out, errOut)
	}
}
