package codexec_test

import (
	"encoding/json"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/config"
)

// instruction is one Dockerfile instruction with its continuation lines
// joined.
type instruction struct{ op, args string }

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []instruction
	var cur string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		cur += strings.TrimSpace(l)
		if strings.HasSuffix(cur, `\`) {
			cur = strings.TrimSuffix(cur, `\`) + " "
			continue
		}
		if op, args, ok := strings.Cut(cur, " "); ok {
			out = append(out, instruction{strings.ToUpper(op), strings.TrimSpace(args)})
		}
		cur = ""
	}
	return out
}

// TestServerDockerfile checks the server image's Dockerfile without an
// engine (the base images cannot be pulled everywhere the tests run): a Go
// build stage of go.mod's Go version building both binaries, a runtime
// with the interpreters and bubblewrap, a non-root user, and an entry
// point whose command line and environment codexec's own parsing accepts.
func TestServerDockerfile(t *testing.T) {
	ins := parseDockerfile(t, "Dockerfile")
	get := func(op string) []string {
		var v []string
		for _, i := range ins {
			if i.op == op {
				v = append(v, i.args)
			}
		}
		return v
	}
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod)
	if diff := cmp.Diff([]string{"GO_VERSION=" + string(goVersion[1])}, get("ARG")); diff != "" {
		t.Errorf("ARG GO_VERSION must be go.mod's go version (-want +got)\n%s", diff)
	}
	froms := get("FROM")
	if len(froms) != 2 || !strings.HasPrefix(froms[0], "golang:${GO_VERSION}") || !strings.HasSuffix(froms[0], " AS build") {
		t.Errorf("FROM %q: want a golang:${GO_VERSION} build stage and one runtime stage", froms)
	}
	run := strings.Join(get("RUN"), "\n")
	for _, w := range []string{"CGO_ENABLED=0 go build", "./cmd/codexec ./cmd/codexec-sandbox"} {
		if !strings.Contains(run, w) {
			t.Errorf("no RUN builds with %q", w)
		}
	}
	for _, pkg := range []string{"python3", "nodejs", "bash", "bubblewrap"} {
		if !regexp.MustCompile(`apt-get install [^&]*\b` + pkg + `\b`).MatchString(run) {
			t.Errorf("the runtime does not install %s", pkg)
		}
	}
	users := get("USER")
	if len(users) == 0 || slices.Contains([]string{"0", "root", "0:0"}, users[len(users)-1]) {
		t.Errorf("USER %q: the image must end as a non-root user", users)
	}
	checkEntrypoint(t, get("ENTRYPOINT"), get("CMD"), get("ENV"), get("EXPOSE"))
}

// checkEntrypoint: codexec serve --http on the exposed port, with flags and
// ENV settings that config.Resolve accepts.
func checkEntrypoint(t *testing.T, entry, cmd, env, expose []string) {
	t.Helper()
	var ep, args []string
	if len(entry) != 1 || json.Unmarshal([]byte(entry[0]), &ep) != nil || !slices.Equal(ep, []string{"codexec"}) {
		t.Fatalf(`ENTRYPOINT %q: want ["codexec"]`, entry)
	}
	if len(cmd) != 1 || json.Unmarshal([]byte(cmd[0]), &args) != nil || len(args) < 3 || args[0] != "serve" || args[1] != "--http" {
		t.Fatalf(`CMD %q: want ["serve", "--http", "ADDR"]`, cmd)
	}
	if _, port, _ := strings.Cut(args[2], ":"); !slices.Equal(expose, []string{port}) {
		t.Errorf("EXPOSE %q, but the server listens on %s", expose, args[2])
	}
	vars := map[string]string{}
	for _, e := range env {
		for _, kv := range strings.Fields(e) {
			k, v, _ := strings.Cut(kv, "=")
			vars[k] = v
		}
	}
	known := map[string]bool{}
	for _, f := range config.Flags() {
		known[f.Env] = true
	}
	for k := range vars {
		if !known[k] {
			t.Errorf("ENV %s is not a codexec setting", k)
		}
	}
	cfg, _, err := config.Resolve(args[1:], func(k string) string { return vars[k] }, "/var/lib/codexec", io.Discard)
	if err != nil {
		t.Fatalf("codexec would refuse the image's command line: %v", err)
	}
	if cfg.Remote.HTTPAddr != args[2] || cfg.SandboxMode != config.ModeSubprocess {
		t.Errorf("HTTP address %q, mode %q: want %s in subprocess mode (the image's user is not root)", cfg.Remote.HTTPAddr, cfg.SandboxMode, args[2])
	}
}

// TestDockerignoreKeepsSources: the build context keeps what the build
// stage copies.
func TestDockerignoreKeepsSources(t *testing.T) {
	raw, err := os.ReadFile(".dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(raw), "\n") {
		l = strings.TrimSuffix(strings.TrimSpace(l), "/")
		if slices.Contains([]string{"go.mod", "go.sum", "cmd", "internal", "*.go", "Dockerfile.sandbox"}, l) {
			t.Errorf(".dockerignore drops %s, which the build needs", l)
		}
	}
}

// TestNamespaceFlagsDocumented: the container flags the Dockerfile's
// header gives for namespace mode are those docs/install.md documents.
func TestNamespaceFlagsDocumented(t *testing.T) {
	df, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := regexp.MustCompile(`--(?:cap-add|security-opt|user) \S+|-v /sys/fs/cgroup\S+|CODEXEC_SANDBOX_MODE=namespace`).FindAllString(string(df), -1)
	if len(flags) < 6 {
		t.Fatalf("the Dockerfile's header names %q; want the namespace-mode flags", flags)
	}
	for _, f := range flags {
		if !strings.Contains(string(doc), f) {
			t.Errorf("docs/install.md does not show %q, which the Dockerfile names", f)
		}
	}
}
