package config

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	return Load(args, func(k string) string { return env[k] }, "/home/u", io.Discard)
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"data": "/home/u/.codexec", "sandbox": "/home/u/.codexec/sandbox", "logs": "/home/u/.codexec/logs",
		"scripts": "/home/u/.codexec/scripts", "mode": "auto", "image": "annabelle-sandbox", "timeout": 30 * time.Second,
		"max": 300 * time.Second, "idle": 15 * time.Minute, "grace": 5 * time.Second, "sessions": 5,
		"mem": int64(512 << 20), "cpu": 1.0, "chars": 10000, "head": 4000, "tail": 4000,
		"retention": Retention{30, 90, 90}, "network": "none", "level": "info",
	}
	got := map[string]any{
		"data": c.DataDir, "sandbox": c.SandboxDir, "logs": c.LogDir, "scripts": c.ScriptsDir, "mode": c.SandboxMode,
		"image": c.DockerImage, "timeout": c.DefaultTimeout, "max": c.MaxTimeout, "idle": c.SessionIdleTimeout,
		"grace": c.KillGrace, "sessions": c.MaxSessions, "mem": c.MemoryLimitBytes, "cpu": c.CPULimit,
		"chars": c.MaxOutputChars, "head": c.TruncationHead, "tail": c.TruncationTail, "retention": c.RetentionDays,
		"network": c.DockerNetwork, "level": c.LogLevel,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestPrecedenceFlagOverEnv(t *testing.T) {
	env := map[string]string{"CODEXEC_MAX_OUTPUT_CHARS": "20000", "CODEXEC_SANDBOX_DIR": "~/sb", "CODEXEC_DOCKER_MEMORY": "1g"}
	c, err := load(t, []string{"--max-output-chars", "30000"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxOutputChars != 30000 || c.SandboxDir != "/home/u/sb" || c.MemoryLimitBytes != 1<<30 {
		t.Errorf("got chars %d dir %s mem %d", c.MaxOutputChars, c.SandboxDir, c.MemoryLimitBytes)
	}
	c, _ = load(t, nil, map[string]string{"CODEXEC_DOCKER_MEMORY": "1g", "CODEXEC_MEMORY_LIMIT": "256m"})
	if c.MemoryLimitBytes != 256<<20 {
		t.Errorf("CODEXEC_MEMORY_LIMIT should override the docker alias, got %d", c.MemoryLimitBytes)
	}
}

func TestInvalidNamesVariable(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"CODEXEC_MAX_OUTPUT_CHARS": "lots"}, "CODEXEC_MAX_OUTPUT_CHARS"},
		{map[string]string{"CODEXEC_SANDBOX_MODE": "vm"}, "CODEXEC_SANDBOX_MODE"},
		{map[string]string{"CODEXEC_DOCKER_CPU": "-1"}, "CODEXEC_DOCKER_CPU"},
		{map[string]string{"CODEXEC_MEMORY_LIMIT": "huge"}, "CODEXEC_MEMORY_LIMIT"},
		{map[string]string{"CODEXEC_LOG_DIR": "relative/logs"}, "CODEXEC_LOG_DIR"},
		{map[string]string{"LOG_LEVEL": "loud"}, "LOG_LEVEL"},
		{map[string]string{"CODEXEC_MAX_TIMEOUT_MS": "9223372036854775807"}, "CODEXEC_MAX_TIMEOUT_MS"},
		{map[string]string{"CODEXEC_ARTIFACT_TTL": "9223372036854775807"}, "CODEXEC_ARTIFACT_TTL"},
		{map[string]string{"CODEXEC_PRINCIPAL_ROOTS": "alice"}, "CODEXEC_PRINCIPAL_ROOTS"},
		{map[string]string{"CODEXEC_PRINCIPAL_ROOTS": "alice=relative"}, "CODEXEC_PRINCIPAL_ROOTS"},
		{map[string]string{"CODEXEC_CGROUP_PARENT": "codexec-alice"}, "CODEXEC_CGROUP_PARENT"},
		{map[string]string{"CODEXEC_CGROUP_PARENT": "/"}, "CODEXEC_CGROUP_PARENT"},
		{map[string]string{"CODEXEC_CGROUP_PARENT": "/a/../b"}, "CODEXEC_CGROUP_PARENT"},
		{map[string]string{"CODEXEC_CGROUP_PARENT": "/a/"}, "CODEXEC_CGROUP_PARENT"},
	}
	for _, c := range cases {
		_, err := load(t, nil, c.env)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v does not name %s", c.env, err, c.want)
		}
	}
}

// A cgroup parent is kept as given, flag over environment.
func TestCgroupParent(t *testing.T) {
	c, err := load(t, []string{"--cgroup-parent", "/user.slice/user-1000.slice/user@1000.service/codexec"}, map[string]string{"CODEXEC_CGROUP_PARENT": "/codexec-alice"})
	if err != nil || c.CgroupParent != "/user.slice/user-1000.slice/user@1000.service/codexec" {
		t.Errorf("CgroupParent = %q (%v)", c.CgroupParent, err)
	}
}

// TestSettingsCompose: a cap below the default of what it caps lowers that
// value, with a warning naming both settings, instead of refusing to start.
func TestSettingsCompose(t *testing.T) {
	cases := []struct {
		env              map[string]string
		def, max         time.Duration
		head, tail, outs int
		warn             string
	}{
		{nil, 30 * time.Second, 300 * time.Second, 4000, 4000, 10000, ""},
		{map[string]string{"CODEXEC_MAX_TIMEOUT_MS": "10000"}, 10 * time.Second, 10 * time.Second, 4000, 4000, 10000, "CODEXEC_MAX_TIMEOUT_MS"},
		{map[string]string{"CODEXEC_DEFAULT_TIMEOUT_MS": "600000"}, 300 * time.Second, 300 * time.Second, 4000, 4000, 10000, "lowered to 300000 ms"},
		{map[string]string{"CODEXEC_MAX_OUTPUT_CHARS": "2000"}, 30 * time.Second, 300 * time.Second, 1000, 1000, 2000, "CODEXEC_MAX_OUTPUT_CHARS"},
		{map[string]string{"CODEXEC_TRUNCATION_HEAD": "12000", "CODEXEC_TRUNCATION_TAIL": "3000"}, 30 * time.Second, 300 * time.Second, 8000, 2000, 10000, "12000+3000"},
	}
	for _, c := range cases {
		cfg, err := load(t, nil, c.env)
		if err != nil {
			t.Errorf("%v: %v", c.env, err)
			continue
		}
		got := []any{cfg.DefaultTimeout, cfg.MaxTimeout, cfg.TruncationHead, cfg.TruncationTail, cfg.MaxOutputChars}
		if diff := cmp.Diff([]any{c.def, c.max, c.head, c.tail, c.outs}, got); diff != "" {
			t.Errorf("%v: (-want +got)\n%s", c.env, diff)
		}
		if w := strings.Join(cfg.Warnings, "\n"); (c.warn == "") != (w == "") || !strings.Contains(w, c.warn) {
			t.Errorf("%v: warnings %q, want one containing %q", c.env, w, c.warn)
		}
	}
}

func TestParseSize(t *testing.T) {
	cases := map[string]int64{"512m": 512 << 20, "1g": 1 << 30, "100MiB": 100 << 20, "64k": 64 << 10, "4096": 4096, "1.5g": 3 << 29}
	for in, want := range cases {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "m", "-5m", "abc"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

func TestAllowedCommandsAndLists(t *testing.T) {
	c, _ := load(t, nil, map[string]string{"ALLOWED_COMMANDS": " ls, cat ,,", "ALLOWED_CWD_ROOTS": "/a,/b"})
	if diff := cmp.Diff([]string{"ls", "cat"}, c.AllowedCommands); diff != "" || !c.AllowedCommandsSet {
		t.Error(diff)
	}
	if diff := cmp.Diff([]string{"/a", "/b"}, c.AllowedCwdRoots); diff != "" {
		t.Error(diff)
	}
	c, _ = load(t, nil, nil)
	if c.AllowedCommandsSet || c.AllowedCommands != nil {
		t.Error("unset ALLOWED_COMMANDS must allow nothing")
	}
}

// TestPrincipalRoots parses per-principal roots: entries separated by ';',
// a principal's directories by ','.
func TestPrincipalRoots(t *testing.T) {
	c, _ := load(t, nil, map[string]string{"CODEXEC_PRINCIPAL_ROOTS": " alice=/srv/a,/data/a ; bob=/srv/b;"})
	want := map[string][]string{"alice": {"/srv/a", "/data/a"}, "bob": {"/srv/b"}}
	if diff := cmp.Diff(want, c.PrincipalRoots); diff != "" {
		t.Error(diff)
	}
}

func TestFlagNames(t *testing.T) {
	if FlagName("CODEXEC_MAX_OUTPUT_CHARS") != "max-output-chars" || FlagName("ALLOWED_COMMANDS") != "allowed-commands" {
		t.Error("flag names")
	}
}

func TestRemote(t *testing.T) {
	c, err := load(t, []string{"--http", "127.0.0.1:8080"}, map[string]string{"CODEXEC_AUTH_TOKENS": "/etc/tokens"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Remote.HTTPAddr != "127.0.0.1:8080" || !c.Remote.AuthEnabled() || c.Remote.Resource() != "http://127.0.0.1:8080/mcp" {
		t.Errorf("remote = %+v, resource %s", c.Remote, c.Remote.Resource())
	}
	if c.Remote.MaxBodyBytes != 4<<20 || c.Remote.ShutdownGrace != 30*time.Second {
		t.Errorf("defaults: body %d grace %v", c.Remote.MaxBodyBytes, c.Remote.ShutdownGrace)
	}
	bad := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, map[string]string{"CODEXEC_AUTH_TOKENS": "/t"}, "CODEXEC_HTTP_ADDR"},
		{[]string{"--http", "nope"}, nil, "host:port"},
		{[]string{"--http", ":1", "--tls-cert", "/c"}, nil, "CODEXEC_TLS_KEY"},
		{[]string{"--http", ":1", "--oauth-issuer", "issuer"}, nil, "CODEXEC_OAUTH_ISSUER"},
		{nil, map[string]string{"CODEXEC_TRANSFER_LISTEN": "0.0.0.0:0"}, "CODEXEC_TRANSFER_LISTEN"},
		{nil, map[string]string{"CODEXEC_TRANSFER_LISTEN": "10.1.2.3:80"}, "CODEXEC_TRANSFER_LISTEN"},
		{nil, map[string]string{"CODEXEC_TRANSFER_LISTEN": "127.0.0.1"}, "CODEXEC_TRANSFER_LISTEN"},
	}
	for _, ok := range []string{"off", "127.0.0.1:0", "[::1]:9000", "localhost:0"} {
		if _, err := load(t, nil, map[string]string{"CODEXEC_TRANSFER_LISTEN": ok}); err != nil {
			t.Errorf("CODEXEC_TRANSFER_LISTEN=%s: %v", ok, err)
		}
	}
	for _, b := range bad {
		if _, err := load(t, b.args, b.env); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%v %v: error %v does not name %s", b.args, b.env, err, b.want)
		}
	}
}
