package tool

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// JSONText renders v as indented JSON text content (the context tools'
// documented results are JSON text).
func JSONText(v any) *mcp.CallToolResult {
	b, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
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
