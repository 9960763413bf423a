package tool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
)

// JSONText renders v as indented JSON text content (the context tools'
// documented results are JSON text).
func JSONText(v any) *mcp.CallToolResult {
	b, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// ResultText renders a compact text version of a result of execute_code's
// shape for clients that read only content.
func ResultText(r engine.Result) *mcp.CallToolResult {
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s", r.Status)
	if r.ExitCode != nil {
		fmt.Fprintf(&b, " (exit %d)", *r.ExitCode)
	}
	fmt.Fprintf(&b, " in %d ms [%s, %s]\n", r.DurationMs, r.ExecutionID, r.Language)
	if r.ErrorMessage != nil {
		fmt.Fprintf(&b, "error: %s\n", *r.ErrorMessage)
	}
	Section(&b, "stdout", r.Stdout)
	Section(&b, "stderr", r.Stderr)
	if len(r.Artifacts) > 0 {
		fmt.Fprintf(&b, "artifacts: %s\n", strings.Join(r.Artifacts, ", "))
	}
	if r.Truncated {
		b.WriteString("(output truncated)\n")
	}
	if r.LogError != "" {
		fmt.Fprintf(&b, "log_error: %s\n", r.LogError)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}

// Section writes "--- name ---" and text, ending in a newline; nothing
// when text is empty.
func Section(b *strings.Builder, name, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(b, "--- %s ---\n%s", name, text)
	if !strings.HasSuffix(text, "\n") {
		b.WriteString("\n")
	}
}
