package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// clientEntry is one server entry of an MCP client's configuration file.
type clientEntry struct {
	Type    *string           `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// clientFormats are the configuration formats of the clients we document:
// the key holding the servers, and whether an entry must say "type":
// "stdio" (VS Code requires it; Claude Code accepts it, stdio by default;
// Claude Desktop and Cursor take command/args/env only).
var clientFormats = []struct {
	file, serversKey string
	typeRequired     bool
	typeAllowed      bool
}{
	{"claude_desktop_config.json", "mcpServers", false, false},
	{"claude-code.mcp.json", "mcpServers", false, true},
	{"cursor-mcp.json", "mcpServers", false, false},
	{"vscode-mcp.json", "servers", true, true},
}

const clientsDir = "../../docs/clients"

// TestClientConfigs: every client snippet parses, has its client's
// required keys and no unknown ones, and names a command line codexec
// accepts: `codexec serve` with flags and settings that its own parsing
// takes (run as `codexec env` with the same flags and environment).
func TestClientConfigs(t *testing.T) {
	for _, f := range clientFormats {
		raw, err := os.ReadFile(filepath.Join(clientsDir, f.file))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]map[string]json.RawMessage
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
		if diff := cmp.Diff([]string{f.serversKey}, keys(doc)); diff != "" {
			t.Errorf("%s: top-level keys (-want +got)\n%s", f.file, diff)
		}
		raw = doc[f.serversKey]["codexec"]
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		var e clientEntry
		if err := dec.Decode(&e); err != nil {
			t.Fatalf("%s: server entry codexec: %v", f.file, err)
		}
		switch {
		case e.Type == nil && f.typeRequired:
			t.Errorf(`%s: the entry lacks "type": "stdio", which this client requires`, f.file)
		case e.Type != nil && (!f.typeAllowed || *e.Type != "stdio"):
			t.Errorf("%s: type %q: this client takes no type, or only stdio", f.file, *e.Type)
		}
		checkInvocation(t, f.file, e.Command, e.Args, e.Env)
	}
}

// TestClaudeCodeCommand: the `claude mcp add` line has the form
// `claude mcp add [options] NAME -- COMMAND ARGS…` and names a codexec
// command line codexec accepts.
func TestClaudeCodeCommand(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(clientsDir, "claude-code.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("want one command line, got %q", lines)
	}
	opts, server, ok := strings.Cut(lines[0], " -- ")
	words := strings.Fields(opts)
	if !ok || len(words) < 4 || strings.Join(words[:3], " ") != "claude mcp add" || words[len(words)-1] != "codexec" {
		t.Fatalf("%q is not `claude mcp add [options] codexec -- COMMAND ARGS…`", lines[0])
	}
	env := map[string]string{}
	for i := 3; i < len(words)-1; i++ {
		switch words[i] {
		case "--transport":
			i++
			if words[i] != "stdio" {
				t.Errorf("transport %q, want stdio", words[i])
			}
		case "--env", "-e":
			i++
			k, v, _ := strings.Cut(words[i], "=")
			env[k] = v
		default:
			t.Errorf("unexpected option %q", words[i])
		}
	}
	argv := strings.Fields(server)
	checkInvocation(t, "claude-code.sh", argv[0], argv[1:], env)
}

// checkInvocation checks that command is a codexec binary and args start
// the server (serve) with flags and environment codexec's configuration
// parsing accepts.
func checkInvocation(t *testing.T, file, command string, args []string, env map[string]string) {
	t.Helper()
	if filepath.Base(command) != "codexec" || !filepath.IsAbs(command) {
		t.Errorf("%s: command %q: want an absolute path to codexec (clients do not search a login shell's PATH)", file, command)
	}
	if len(args) == 0 || args[0] != "serve" {
		t.Errorf("%s: args %q: want serve first", file, args)
		return
	}
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	out, errOut, code := runCLI(t, kv, append([]string{"env"}, args[1:]...)...)
	if code != 0 || errOut != "" {
		t.Errorf("%s: codexec does not accept %q with env %q: exit %d: %s", file, args, kv, code, errOut)
	}
	shown := map[string][]string{} // variable → source, value
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			shown[f[0]] = f[1:]
		}
	}
	for k, v := range env {
		if diff := cmp.Diff([]string{"env", v}, shown[k]); diff != "" {
			t.Errorf("%s: %s=%s: codexec env shows (-want +got)\n%s", file, k, v, diff)
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
