package tool

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
)

// TestToolErrors calls tools registered with Add whose handlers fail in
// each way, and checks what the client reads: the text, isError and the
// structured content.
// listOut stands for the result of a tool without an output schema.
type listOut struct {
	Items []string `json:"items"`
}

func TestToolErrors(t *testing.T) {
	fail := map[string]error{
		"coded":   Coded("SCRIPT_NOT_FOUND", "script not found: %s", "x"),
		"refused": Refused("unknown session: s1"),
		"plain":   errors.New("give a session_id"),
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	r := NewRegistrar(srv)
	for kind, err := range fail {
		Add(r, &mcp.Tool{Name: "run_" + kind, OutputSchema: OutputSchema[engine.Result]()},
			func(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, engine.Result, error) {
				return nil, engine.Result{}, err
			})
		Add(r, &mcp.Tool{Name: "list_" + kind},
			func(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, listOut, error) {
				return nil, listOut{}, err
			})
	}
	cs := connect(t, srv)
	setup := map[string]any{"artifacts": []any{}, "duration_ms": 0.0, "error_message": "unknown session: s1",
		"execution_id": "", "execution_time": 0.0, "exit_code": nil, "language": "",
		"status": "setup_error", "stderr": "", "stdout": "", "success": false}
	for _, tc := range []struct {
		tool, text string
		structured any
	}{
		{"run_coded", `{"error":"script not found: x","code":"SCRIPT_NOT_FOUND"}`, nil},
		{"list_coded", `{"error":"script not found: x","code":"SCRIPT_NOT_FOUND"}`, nil},
		{"run_refused", "error: unknown session: s1", setup},
		{"list_refused", "error: unknown session: s1", nil},
		{"run_plain", "give a session_id", nil},
		{"list_plain", "give a session_id", nil},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var structured any
			if res.StructuredContent != nil {
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &structured)
			}
			got := []any{res.IsError, len(res.Content), res.Content[0].(*mcp.TextContent).Text, structured}
			want := []any{true, 1, tc.text, tc.structured}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// connect serves srv over in-memory transports and returns a client session.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}
