package packagetools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/packagetools"
)

// TestRender: a background install's result renders as the foreground
// call's answer: the same text, the result as structured content.
func TestRender(t *testing.T) {
	for _, c := range []struct {
		name string
		out  packagetools.InstallPackageOut
		text string
	}{
		{"installed", packagetools.InstallPackageOut{Success: true, Package: "demo", Version: "2.0.0", Language: "python",
			DurationMs: 5, ExecutionID: "exec_1", Status: "success"}, "installed demo 2.0.0 (python) globally in 5 ms"},
		{"blocked", packagetools.InstallPackageOut{Package: "is-number", Language: "node", SessionID: "sess_1",
			Error: "is-number is blocked", ExecutionID: "exec_2", Status: "execution_error"}, "install of is-number (node) into session sess_1 FAILED: is-number is blocked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, err := json.Marshal(c.out)
			if err != nil {
				t.Fatal(err)
			}
			res, err := packagetools.Render(raw)
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !strings.HasPrefix(text, c.text) {
				t.Errorf("text %q, want it to start with %q", text, c.text)
			}
			if diff := cmp.Diff(string(raw), string(res.StructuredContent.(json.RawMessage))); diff != "" {
				t.Errorf("structured content (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := packagetools.Render(json.RawMessage(`[1]`)); err == nil {
		t.Error("an unreadable result rendered without an error")
	}
}
