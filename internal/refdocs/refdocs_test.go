package refdocs

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestMain lets this test binary act as the sandbox helper, as the codexec
// binary does, should the throwaway server re-execute it.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// TestGeneratedDocsCurrent renders the reference documents again, in
// memory, and fails when the committed ones differ: a tool or setting was
// changed without regenerating them.
func TestGeneratedDocsCurrent(t *testing.T) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	files, err := Generate(context.Background(), app.HostEnv{Path: os.Getenv("PATH")}, config.Flags())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "docs", name))
		if err != nil {
			t.Errorf("docs/%s: %v; run `go generate ./...` (or go generate ./internal/refdocs) to create it", name, err)
			continue
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("docs/%s is stale; run `go generate ./...` (or go generate ./internal/refdocs) and commit it (-generated +committed):\n%s", name, diff)
		}
	}
}

// TestEveryToolAndSettingDocumented: the generated files name every tool
// the catalog lists and every setting of the table.
func TestEveryToolAndSettingDocumented(t *testing.T) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	tools, err := app.ToolCatalog(context.Background(), app.HostEnv{Path: os.Getenv("PATH")})
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) < 20 {
		t.Fatalf("catalog lists %d tools; want every toolset's (over 20)", len(tools))
	}
	files, err := Files(tools, config.Flags())
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools {
		if !strings.Contains(string(files["tools.md"]), "\n## "+tl.Name+"\n") {
			t.Errorf("tools.md has no section for %s", tl.Name)
		}
	}
	for _, f := range config.Flags() {
		if !strings.Contains(string(files["settings.md"]), "| `--"+f.Name+"` | `"+f.Env+"` |") {
			t.Errorf("settings.md has no row for %s", f.Env)
		}
	}
}

// TestToolRendering covers the schema shapes tools use or may use: titles,
// type arrays and anyOf for nullable values, enums, nested objects and
// arrays of objects, an output schema, and no arguments at all.
func TestToolRendering(t *testing.T) {
	in := json.RawMessage(`{"type":"object","required":["language"],"properties":{
		"language":{"type":"string","enum":["python","node"],"description":"the | language"},
		"timeout":{"anyOf":[{"type":"integer"},{"type":"null"}],"description":"seconds"},
		"stdin":{"type":["null","string"]},
		"opts":{"type":"object","properties":{"env":{"type":"array","items":{"type":"string"}}}},
		"files":{"anyOf":[{"type":"null"},{"type":"array","items":{"type":"object","required":["path"],"properties":{"path":{"type":"string"}}}}]},
		"when":{"type":"string","format":"date-time"},
		"result":{"description":"any JSON"}}}`)
	out := json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","const":true}}}`)
	tools := []*mcp.Tool{
		{Name: "zeta", Description: "No args.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}},
		{Name: "alpha", Title: "Alpha tool", Description: "Does\nthings.", InputSchema: in, OutputSchema: out,
			Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)}},
	}
	got, err := Tools(tools)
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(got), "- [`alpha`]")
	want := `(#alpha) — Alpha tool
- [` + "`zeta`" + `](#zeta)

## alpha

**Alpha tool**

Does
things.

Annotations: readOnlyHint ` + "`false`" + `, destructiveHint ` + "`true`" + `, idempotentHint ` + "`false`" + `, openWorldHint ` + "`false`" + `

Arguments:

| Name | Type | Required | Description |
|------|------|----------|-------------|
| ` + "`files`" + ` | array of object or null | no | — |
| ` + "`files[].path`" + ` | string | yes | — |
| ` + "`language`" + ` | one of: "python", "node" | yes | the \| language |
| ` + "`opts`" + ` | object | no | — |
| ` + "`opts.env`" + ` | array of string | no | — |
| ` + "`result`" + ` | any | no | any JSON |
| ` + "`stdin`" + ` | string or null | no | — |
| ` + "`timeout`" + ` | integer or null | no | seconds |
| ` + "`when`" + ` | string (date-time) | no | — |

Result (structuredContent):

| Name | Type | Required | Description |
|------|------|----------|-------------|
| ` + "`ok`" + ` | always true | no | — |

## zeta

No args.

Annotations: readOnlyHint ` + "`true`" + `, idempotentHint ` + "`true`" + `

Arguments:

No arguments.
`
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("rendering (-want +got)\n%s", diff)
	}
}
