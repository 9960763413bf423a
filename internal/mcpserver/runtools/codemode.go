package runtools

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/budget"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/upstream"
)

// SearchToolsIn is search_tools' input.
type SearchToolsIn struct {
	Query string `json:"query" jsonschema:"what the code must do"`
	Limit int    `json:"limit,omitempty" jsonschema:"max results"`
	DTS   bool   `json:"dts,omitempty" jsonschema:"add .d.ts"`
}

// ToolMatch is one ranked upstream tool.
type ToolMatch struct {
	Name      string `json:"name"`
	Signature string `json:"signature"`
	Doc       string `json:"doc,omitempty"`
}

// SearchToolsOut is search_tools' result.
type SearchToolsOut struct {
	Tools []ToolMatch `json:"tools"`
	DTS   string      `json:"dts,omitempty"`
}

// registerCodeMode adds search_tools when upstream servers are configured:
// without upstreams it could only ever return nothing, and every listed
// tool costs each conversation its description.
func (s *toolset) registerCodeMode() {
	if s.deps.Upstreams == nil {
		return
	}
	// Its schemas are the full ones, additionalProperties false and an
	// output schema with required lists, as clients have always seen them.
	keep := func(*jsonschema.Schema) {}
	tool.Add(s.r, &mcp.Tool{Name: "search_tools", Title: "Search upstream tools",
		Description: "Find upstream MCP tools for execute_code code (bind via tools or intent); returns TS signatures.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)},
		InputSchema: tool.SchemaOf[SearchToolsIn](keep), OutputSchema: tool.SchemaOf[SearchToolsOut](keep),
	}, s.searchTools)
}

func (s *toolset) searchTools(ctx context.Context, _ *mcp.CallToolRequest, in SearchToolsIn) (*mcp.CallToolResult, SearchToolsOut, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, SearchToolsOut{}, tool.Invalidf("query is empty: say what the code must do")
	}
	k := in.Limit
	if k <= 0 {
		k = s.deps.Config.CodeMode.TopK
	}
	tools := s.rank(ctx, in.Query, min(k, 50))
	out := SearchToolsOut{Tools: []ToolMatch{}}
	for _, t := range tools {
		out.Tools = append(out.Tools, ToolMatch{Name: t.FullName(), Signature: codemode.Signature(t), Doc: codemode.OneLineDoc(t.Description)})
	}
	if in.DTS {
		out.DTS = codemode.Declarations(tools)
	}
	return nil, out, nil
}

// rank returns the top k upstream tools for query.
func (s *toolset) rank(ctx context.Context, query string, k int) []codemode.Tool {
	var out []codemode.Tool
	for _, t := range s.deps.Upstreams.Rank(ctx, query, k) {
		out = append(out, codemode.Tool(t))
	}
	return out
}

// injectedTools picks the tools bound into a code-mode program: the ones
// named in tools (exact server.tool or globs; skips ranking), else the top
// k for intent, else none.
func (s *toolset) injectedTools(ctx context.Context, names []string, intent string) ([]codemode.Tool, error) {
	up := s.deps.Upstreams
	if up == nil {
		if len(names) > 0 {
			return nil, tool.Coded(tool.CodeNotEnabled, "tools given but no upstream MCP servers are configured (CODEXEC_UPSTREAMS)")
		}
		return nil, nil
	}
	if len(names) == 0 {
		if strings.TrimSpace(intent) == "" {
			return nil, nil
		}
		return s.rank(ctx, intent, s.deps.Config.CodeMode.TopK), nil
	}
	cat := up.Tools(ctx)
	var out []codemode.Tool
	seen := map[string]bool{}
	for _, n := range names {
		matched := false
		for _, t := range cat {
			full := t.Server + "." + t.Name
			if ok, _ := path.Match(n, full); ok || n == full {
				matched = true
				if !seen[full] {
					seen[full] = true
					out = append(out, codemode.Tool(t))
				}
			}
		}
		if !matched {
			return nil, unknownTool(up, n)
		}
	}
	return out, nil
}

// unknownTool explains why a named tool matched nothing: the policy denies
// it, or no upstream has it.
func unknownTool(up *upstream.Manager, name string) error {
	if srv, toolName, ok := strings.Cut(name, "."); ok && !strings.ContainsAny(name, "*?[") {
		if err := up.Allowed(srv, toolName); err != nil {
			return tool.Coded(tool.CodeNotAllowed, "%v", err)
		}
	}
	return tool.Coded(tool.CodeToolNotFound, "no upstream tool matches %q (use search_tools; names are server.tool)", name)
}

// fitResult turns a code-mode result too large for one message into a
// RuntimeError saying so: the value and logs appear twice (JSON text and
// structured content), escaped, and a client that cannot read the message
// would drop the connection instead of seeing any answer.
func fitResult(r engine.Result) engine.Result {
	raw := 0
	if v, ok := r.Value.(json.RawMessage); ok {
		raw = len(v)
	}
	for _, l := range r.LogLines() {
		raw += len(l)
	}
	if raw*14 < budget.MessageBytes { // even escaped twice over, it fits
		return r
	}
	text := codeModeText(r).Content[0].(*mcp.TextContent).Text
	structured, _ := json.Marshal(r)
	size := len(text) + len(structured)
	if size <= budget.MessageBytes {
		return r
	}
	msg := fmt.Sprintf("the returned value and logs take %d bytes once encoded, more than one message carries to every MCP client (%d MiB): return less, or write the data to a file and return its path (read it with download_file)",
		size, budget.MessageBytes>>20)
	r.Value, r.Logs = json.RawMessage("null"), &[]string{}
	r.CodeError = &codemode.Error{Type: "RuntimeError", Name: "ResultTooLarge", Message: msg}
	full := "ResultTooLarge: " + msg
	r.Status, r.Success, r.ErrorMessage = engine.StatusExecutionError, false, &full
	return r
}
