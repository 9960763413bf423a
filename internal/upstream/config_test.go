package upstream

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseExpandsVariables(t *testing.T) {
	lookup := LookupIn([]string{"TOKEN=t0k", "HOST=example.test"})
	servers, err := Parse([]byte(`{"mcpServers": {
		"gh": {"command": "gh-mcp", "args": ["--token", "${TOKEN}"], "env": {"GH_TOKEN": "${TOKEN}", "PLAIN": "x"}},
		"web": {"url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
		"bad": {"command": "x", "env": {"K": "${MISSING}"}},
		"both": {"command": "x", "url": "http://y"},
		"neither": {},
		"1st": {"command": "x"}
	}}`), lookup)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]ServerConfig{}
	for _, s := range servers {
		byName[s.Name] = s
	}
	gh := byName["gh"]
	if gh.Err != nil || !gh.Stdio() || gh.Env["GH_TOKEN"] != "t0k" || gh.Env["PLAIN"] != "x" {
		t.Errorf("gh %+v", gh)
	}
	if diff := cmp.Diff([]string{"--token", "t0k"}, gh.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	web := byName["web"]
	if web.Err != nil || web.Stdio() || web.URL != "https://example.test/mcp" || web.Headers["Authorization"] != "Bearer t0k" {
		t.Errorf("web %+v", web)
	}
	for name, want := range map[string]string{"bad": "MISSING", "both": "exactly one", "neither": "exactly one", "1st": "start with a letter"} {
		if err := byName[name].Err; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want it to mention %q", name, err, want)
		}
	}
}

func TestParseRejectsBadFiles(t *testing.T) {
	for _, in := range []string{`{`, `{"servers": {}}`, `[]`} {
		if _, err := Parse([]byte(in), LookupIn(nil)); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

func TestPolicy(t *testing.T) {
	cases := []struct {
		spec, server, tool string
		ok                 bool
	}{
		{"", "memory", "delete_entities", true},
		{"!*.delete_*", "memory", "delete_entities", false},
		{"!*.delete_*", "memory", "read_graph", true},
		{"memory.*", "github", "list_commits", false},
		{"memory.*, github.list_*", "github", "list_commits", true},
		{"memory.*,-memory.delete_*", "memory", "delete_relations", false},
		{"memory.*,!memory.delete_*", "memory", "create_entities", true},
	}
	for _, c := range cases {
		p, err := ParsePolicy(c.spec)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Check(c.server, c.tool)
		if (err == nil) != c.ok {
			t.Errorf("%q %s.%s: %v, want ok=%v", c.spec, c.server, c.tool, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "CODEXEC_TOOL_POLICY") {
			t.Errorf("error does not name the policy: %v", err)
		}
	}
	if _, err := ParsePolicy("a.[b"); err == nil {
		t.Error("bad glob accepted")
	}
}
