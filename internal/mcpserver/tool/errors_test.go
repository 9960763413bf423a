package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/errcode"
)

// listOut stands for the result of a tool without an output schema.
type listOut struct {
	Items []string `json:"items"`
}

// shapedOut stands for a result type that shapes its tools' failures
// (execute_code's result does so with status setup_error).
type shapedOut struct {
	Status string `json:"status"`
	Error  string `json:"error_message,omitempty"`
}

func (shapedOut) FailureShape(message, code string) any {
	return struct {
		shapedOut
		Code string `json:"code"`
	}{shapedOut{Status: "setup_error", Error: message}, code}
}

// strictOut stands for a result whose output schema rejects the error
// object (required fields, no other properties).
type strictOut struct {
	Tools []string `json:"tools"`
}

// TestToolErrors calls tools registered with Add whose handlers fail in
// each way, and checks what the client reads: isError, the text and the
// structured content.
func TestToolErrors(t *testing.T) {
	fail := map[string]error{
		"coded":  Coded(CodeScriptNotFound, "script not found: %s", "x"),
		"domain": fmt.Errorf("resume: %w", errcode.New(errcode.SessionNotFound, "unknown session: s1")),
		"plain":  errors.New("disk on fire"),
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	r := NewRegistrar(srv)
	for kind, err := range fail {
		Add(r, &mcp.Tool{Name: "run_" + kind, OutputSchema: OutputSchema[shapedOut]()},
			func(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, shapedOut, error) {
				return nil, shapedOut{}, err
			})
		Add(r, &mcp.Tool{Name: "list_" + kind},
			func(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, listOut, error) {
				return nil, listOut{}, err
			})
		Add(r, &mcp.Tool{Name: "strict_" + kind, OutputSchema: SchemaOf[strictOut](func(*jsonschema.Schema) {})},
			func(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, strictOut, error) {
				return nil, strictOut{}, err
			})
	}
	cs := connect(t, srv)
	setup := func(msg, code string) map[string]any {
		return map[string]any{"error_message": msg, "code": code, "status": "setup_error"}
	}
	obj := func(msg, code string) map[string]any { return map[string]any{"error": msg, "code": code} }
	unknown := "resume: unknown session: s1"
	for _, tc := range []struct {
		tool       string
		want       map[string]any // the error object of the text
		structured any
	}{
		{"run_coded", obj("script not found: x", "SCRIPT_NOT_FOUND"), setup("script not found: x", "SCRIPT_NOT_FOUND")},
		{"list_coded", obj("script not found: x", "SCRIPT_NOT_FOUND"), obj("script not found: x", "SCRIPT_NOT_FOUND")},
		{"strict_coded", obj("script not found: x", "SCRIPT_NOT_FOUND"), nil},
		{"run_domain", obj(unknown, "SESSION_NOT_FOUND"), setup(unknown, "SESSION_NOT_FOUND")},
		{"list_domain", obj(unknown, "SESSION_NOT_FOUND"), obj(unknown, "SESSION_NOT_FOUND")},
		// An error nobody coded is the server's failure, never the caller's.
		{"run_plain", obj("disk on fire", "INTERNAL_ERROR"), setup("disk on fire", "INTERNAL_ERROR")},
		{"list_plain", obj("disk on fire", "INTERNAL_ERROR"), obj("disk on fire", "INTERNAL_ERROR")},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			var text, structured any
			_ = json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text)
			if res.StructuredContent != nil {
				b, _ := json.Marshal(res.StructuredContent)
				_ = json.Unmarshal(b, &structured)
			}
			got := []any{res.IsError, len(res.Content), text, structured}
			want := []any{true, 1, any(tc.want), tc.structured}
			if tc.structured == nil {
				want[3] = nil
			}
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
