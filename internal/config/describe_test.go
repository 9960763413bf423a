package config

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestToolsetsAll: "all", the default, means every toolset, alone or in a list.
func TestToolsetsAll(t *testing.T) {
	for _, v := range []string{"", "all", "ALL", "exec,all"} {
		c, err := load(t, nil, map[string]string{"CODEXEC_TOOLSETS": v})
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if diff := cmp.Diff(Toolsets, c.Toolsets); diff != "" {
			t.Errorf("%q: (-want +got)\n%s", v, diff)
		}
	}
	c, _ := load(t, nil, map[string]string{"CODEXEC_TOOLSETS": "exec, files"})
	if diff := cmp.Diff([]string{"exec", "files"}, c.Toolsets); diff != "" {
		t.Errorf("a list: (-want +got)\n%s", diff)
	}
}

// TestResolveSources: each setting reports the value in effect and whether
// it came from a flag, the environment or the default; aliases of one field
// share the winner's source.
func TestResolveSources(t *testing.T) {
	env := map[string]string{"CODEXEC_MAX_OUTPUT_CHARS": "2000", "CODEXEC_DOCKER_MEMORY": "1g", "CODEXEC_ARTIFACT_TTL": "90"}
	_, got, err := Resolve([]string{"--max-sessions", "7", "--http", "127.0.0.1:9"}, func(k string) string { return env[k] }, "/home/u", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	byEnv := map[string]Effective{}
	for _, e := range got {
		byEnv[e.Env] = e
	}
	want := map[string]Effective{
		"CODEXEC_MAX_SESSIONS":     {"CODEXEC_MAX_SESSIONS", "7", SourceFlag},
		"CODEXEC_HTTP_ADDR":        {"CODEXEC_HTTP_ADDR", "127.0.0.1:9", SourceFlag},
		"CODEXEC_MAX_OUTPUT_CHARS": {"CODEXEC_MAX_OUTPUT_CHARS", "2000", SourceEnv},
		"CODEXEC_TRUNCATION_HEAD":  {"CODEXEC_TRUNCATION_HEAD", "1000", SourceDefault}, // lowered by compose
		"CODEXEC_DOCKER_MEMORY":    {"CODEXEC_DOCKER_MEMORY", "1g", SourceEnv},
		"CODEXEC_MEMORY_LIMIT":     {"CODEXEC_MEMORY_LIMIT", "1g", SourceEnv},
		"CODEXEC_ARTIFACT_TTL":     {"CODEXEC_ARTIFACT_TTL", "1m30s", SourceEnv},
		"CODEXEC_SANDBOX_DIR":      {"CODEXEC_SANDBOX_DIR", "/home/u/.codexec/sandbox", SourceDefault},
		"CODEXEC_DOCKER_CPU":       {"CODEXEC_DOCKER_CPU", "1", SourceDefault},
		"CODEXEC_TOOLSETS":         {"CODEXEC_TOOLSETS", strings.Join(Toolsets, ","), SourceDefault},
	}
	for name, w := range want {
		if diff := cmp.Diff(w, byEnv[name]); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", name, diff)
		}
	}
	if len(got) != len(settings) {
		t.Errorf("%d settings listed, want all %d", len(got), len(settings))
	}
}

// TestEffectiveValuesReload: every effective value, fed back as the
// setting's value, loads to the same configuration (the get side of each
// kind writes what its set side reads).
func TestEffectiveValuesReload(t *testing.T) {
	c1, eff, err := Resolve(nil, func(string) string { return "" }, "/home/u", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, e := range eff {
		env[e.Env] = e.Value
	}
	c2, err := load(t, nil, env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c1, c2); diff != "" {
		t.Errorf("(-defaults +reloaded)\n%s", diff)
	}
}

func TestMaskSecrets(t *testing.T) {
	cases := []struct{ in, want string }{
		{"https://user:s3cret@pypi.example/simple", "https://***@pypi.example/simple"},
		{"https://ghp_token@host/x", "https://***@host/x"},
		{"https://issuer.example/jwks?api_key=k1&x=1", "https://issuer.example/jwks?api_key=***&x=1"},
		{"https://a.example,https://u:p@b.example", "https://a.example,https://***@b.example"},
		{"https://registry.npmjs.org/", "https://registry.npmjs.org/"},
		{"/etc/codexec/tokens", "/etc/codexec/tokens"},
		{"", ""},
	}
	for _, c := range cases {
		if got := MaskSecrets(c.in); got != c.want {
			t.Errorf("MaskSecrets(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for _, n := range []int64{1, 100, 1 << 10, 1536 << 10, 512 << 20, 1 << 30, 3 << 29, 1<<30 + 1} {
		back, err := ParseSize(FormatSize(n))
		if err != nil || back != n {
			t.Errorf("FormatSize(%d) = %q, reads back as %d, %v", n, FormatSize(n), back, err)
		}
	}
}
