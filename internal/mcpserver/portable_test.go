package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
)

// TestToolSchemasPortable applies the schema portability rules of MCP
// Inspector's check (and of the clients it speaks for) to every tool of
// every toolset, search_tools included (it needs an upstreams file), so the
// warnings cannot come back:
//
//   - every tool has a title and an output schema (every tool returns
//     structured content, which clients check against it);
//   - no schema is a boolean schema, and none uses $ref or $defs;
//   - "type" is one string, never an array (nullable is anyOf);
//   - every schema has a type, or is anyOf/oneOf of schemas that do;
//   - every object schema has "properties".
func TestToolSchemasPortable(t *testing.T) {
	s := newFakeServer(t, fakeOptions{upstreams: true, tweak: func(c *config.Config) { c.Toolsets = mcpserver.Toolsets }})
	var tools []map[string]any
	if err := json.Unmarshal(listTools(t, s.Server), &tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	var problems []string
	for _, tl := range tools {
		name, _ := tl["name"].(string)
		names = append(names, name)
		if title, _ := tl["title"].(string); title == "" {
			problems = append(problems, name+": no title")
		}
		for _, key := range []string{"inputSchema", "outputSchema"} {
			s, ok := tl[key]
			if !ok {
				problems = append(problems, name+": no "+key)
				continue
			}
			problems = append(problems, portability(name+" "+key, s)...)
		}
	}
	if !slices.Contains(names, "search_tools") || len(names) < 23 {
		t.Errorf("not every toolset is on: %v", names)
	}
	sort.Strings(problems)
	if diff := cmp.Diff([]string(nil), problems); diff != "" {
		t.Errorf("unportable tool schemas (-want +got):\n%s", diff)
	}
}

// portability returns what breaks the rules in schema s (at path) and below.
func portability(path string, s any) []string {
	m, ok := s.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: %v schema", path, s)}
	}
	var out []string
	for _, k := range []string{"$ref", "$defs", "definitions"} {
		if _, ok := m[k]; ok {
			out = append(out, path+": uses "+k)
		}
	}
	branches, _ := m["anyOf"].([]any)
	if one, ok := m["oneOf"].([]any); ok {
		branches = append(branches, one...)
	}
	switch typ := m["type"].(type) {
	case string:
		if _, ok := m["properties"].(map[string]any); typ == "object" && !ok {
			out = append(out, path+": object without properties")
		}
	case nil:
		if len(branches) == 0 {
			out = append(out, path+": no type")
		}
	default:
		out = append(out, fmt.Sprintf("%s: type is %v, not one string", path, typ))
	}
	for i, b := range branches {
		out = append(out, portability(fmt.Sprintf("%s.anyOf[%d]", path, i), b)...)
	}
	props, _ := m["properties"].(map[string]any)
	for k, p := range props {
		out = append(out, portability(path+"."+k, p)...)
	}
	for _, k := range []string{"items", "additionalProperties"} {
		if sub, ok := m[k]; ok && sub != false {
			out = append(out, portability(path+"."+k, sub)...)
		}
	}
	return out
}
