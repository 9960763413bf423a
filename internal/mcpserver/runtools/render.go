package runtools

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/execresult"
	"github.com/codexec/codexec/internal/shell"
)

// BackgroundTools are this package's tools whose calls can run in the background
// (background: true), and so as MCP tasks (send_to_session and install_package
// have a background form too).
var BackgroundTools = []string{"execute_code", "run_script", "execute_command", "execute_process"}

// Render is the CallToolResult that a foreground call of tool would have
// returned, for the result (structured content) of one of its background
// runs: the same text and structured content, so a task's result reads as
// the plain call's.
func Render(tool string, result json.RawMessage) (json.RawMessage, error) {
	var res *mcp.CallToolResult
	switch tool {
	case "execute_command", "execute_process":
		var r shell.Result
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, fmt.Errorf("read %s's result: %w", tool, err)
		}
		var err error
		if res, _, err = commandResult(r, nil); err != nil {
			return nil, err
		}
	default:
		var r engine.Result
		if err := json.Unmarshal(result, &r); err != nil {
			return nil, fmt.Errorf("read %s's result: %w", tool, err)
		}
		res = execresult.Text(r)
	}
	res.StructuredContent = result
	return json.Marshal(res)
}
