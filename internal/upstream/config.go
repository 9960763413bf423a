// Package upstream makes codexec an MCP client of other MCP servers (the
// gateway behind code mode's tools): it reads the "mcpServers" file MCP
// clients already use, connects to each server (stdio or Streamable HTTP)
// with the go-sdk client, keeps each server's tool catalogue current
// (listChanged), restarts a crashed stdio server on its next use, and calls
// tools on behalf of sandboxed code. It is the one place that enforces what
// holds for every upstream call: the tool policy (CODEXEC_TOOL_POLICY), the
// per-call timeout and the result cap (Options). A server that cannot start
// is reported in its State and never stops the others.
//
// Secrets stay on the host: `${VAR}` references in a server's command, args,
// env, url and headers are expanded from codexec's own environment (passed in
// by main), and nothing of it reaches the sandbox.
package upstream

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// ServerConfig is one entry of the mcpServers file after ${VAR} expansion.
// Exactly one of Command (stdio) and URL (Streamable HTTP) is set when Err is
// nil.
type ServerConfig struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// Err says why this entry cannot be used (missing variable, neither
	// command nor url, …); the server is then reported failed.
	Err error
}

// Stdio reports whether the server is started as a child process.
func (c ServerConfig) Stdio() bool { return c.Command != "" }

type fileServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

var nameRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// LoadFile reads an mcpServers file; lookup resolves ${VAR} references (it is
// codexec's own environment). A file that cannot be read or parsed is an
// error; a bad entry is returned with Err set.
func LoadFile(path string, lookup func(string) (string, bool)) ([]ServerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("upstreams file: %w", err)
	}
	return Parse(data, lookup)
}

// Parse decodes {"mcpServers": {name: {command,args,env} | {url,headers}}},
// sorted by name.
func Parse(data []byte, lookup func(string) (string, bool)) ([]ServerConfig, error) {
	var f struct {
		MCPServers map[string]fileServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("upstreams file is not valid JSON: %w", err)
	}
	if f.MCPServers == nil {
		return nil, fmt.Errorf(`upstreams file has no "mcpServers" object`)
	}
	out := make([]ServerConfig, 0, len(f.MCPServers))
	for name, s := range f.MCPServers {
		out = append(out, resolve(name, s, lookup))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func resolve(name string, s fileServer, lookup func(string) (string, bool)) ServerConfig {
	c := ServerConfig{Name: name}
	if !nameRe.MatchString(name) {
		c.Err = fmt.Errorf("server name %q must start with a letter and use letters, digits, _ or -", name)
		return c
	}
	x := expander{lookup: lookup}
	c.Command, c.URL = x.expand(s.Command), x.expand(s.URL)
	for _, a := range s.Args {
		c.Args = append(c.Args, x.expand(a))
	}
	c.Env, c.Headers = x.expandMap(s.Env), x.expandMap(s.Headers)
	switch {
	case x.missing != nil:
		c.Err = fmt.Errorf("references unset environment variable(s) %s", strings.Join(x.missing, ", "))
	case (c.Command == "") == (c.URL == ""):
		c.Err = fmt.Errorf(`needs exactly one of "command" (stdio) or "url" (Streamable HTTP)`)
	}
	return c
}

var varRe = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expander replaces ${VAR} and remembers the names it could not resolve.
type expander struct {
	lookup  func(string) (string, bool)
	missing []string
}

func (x *expander) expand(s string) string {
	return varRe.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		if v, ok := x.lookup(name); ok {
			return v
		}
		x.missing = append(x.missing, name)
		return ""
	})
}

func (x *expander) expandMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = x.expand(v)
	}
	return out
}

// LookupIn returns a lookup over a "K=V" environment list.
func LookupIn(environ []string) func(string) (string, bool) {
	m := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}
