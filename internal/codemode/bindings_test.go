package codemode

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	cases := []struct{ in, camel, snake string }{
		{"list_commits", "listCommits", "list_commits"},
		{"get-sum", "getSum", "get_sum"},
		{"ListCommits", "listCommits", "list_commits"},
		{"my server", "myServer", "my_server"},
		{"2fa", "_2fa", "_2fa"},
		{"delete", "delete_", "delete_"},
	}
	for _, c := range cases {
		if got := CamelName(c.in); got != c.camel {
			t.Errorf("CamelName(%q) = %q, want %q", c.in, got, c.camel)
		}
		if got := SnakeName(c.in); got != c.snake {
			t.Errorf("SnakeName(%q) = %q, want %q", c.in, got, c.snake)
		}
	}
}

func TestArgsType(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{}}`, "Record<string, any>"},
		{`{"type":"object"}`, "{}"},
		{`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}},"required":["path"]}`, "{ head?: number; path: string }"},
		{`{"type":"object","properties":{"kind":{"enum":["a","b"]},"tags":{"type":"array","items":{"type":"string"}}}}`, `{ kind?: "a" | "b"; tags?: string[] }`},
		{`{"type":"object","properties":{"e":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`, "{ e?: { name: string }[] }"},
		{`{"type":"object","properties":{"x":{"type":["string","null"]},"m":{"type":"object","additionalProperties":{"type":"integer"}}}}`, "{ m?: Record<string, number>; x?: string | null }"},
		{`{"type":"object","properties":{"a-b":{"anyOf":[{"type":"string"},{"type":"boolean"}]}}}`, `{ "a-b"?: string | boolean }`},
	}
	for _, c := range cases {
		if got := ArgsType(json.RawMessage(c.schema)); got != c.want {
			t.Errorf("ArgsType(%s) = %q, want %q", c.schema, got, c.want)
		}
	}
}

func TestGroupAndDeclarations(t *testing.T) {
	tools := []Tool{
		{Server: "everything", Name: "get-sum", Description: "Returns the sum of two numbers. More text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		{Server: "everything", Name: "echo", InputSchema: json.RawMessage(`{"type":"object","properties":{"message":{"type":"string"}}}`)},
		{Server: "my-srv", Name: "list_items", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	g := Group(tools)
	if diff := cmp.Diff(map[string][]string{"get-sum": {"getSum", "get_sum"}}, g[0].Aliases); diff != "" {
		t.Errorf("aliases (-want +got):\n%s", diff)
	}
	if g[1].Ident != "mySrv" {
		t.Errorf("ident %q", g[1].Ident)
	}
	d := Declarations(tools)
	for _, want := range []string{
		"declare const everything: {",
		"  /** Returns the sum of two numbers. */\n  \"get-sum\"(args: { a: number; b: number }): Promise<any>;\n  getSum(args: { a: number; b: number }): Promise<any>;",
		"  echo(args?: { message?: string }): Promise<any>;",
		"declare const mySrv: {\n  list_items(args?: {}): Promise<any>;\n  listItems(args?: {}): Promise<any>;",
	} {
		if !strings.Contains(d, want) {
			t.Errorf("declarations lack %q:\n%s", want, d)
		}
	}
	if got := Signature(tools[0]); got != "everything.getSum(args: { a: number; b: number }): Promise<any>" {
		t.Errorf("signature %q", got)
	}
}
