package sessiontools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
	"github.com/codexec/codexec/internal/session"
)

// connect serves the sessions and contexts toolsets over a session manager whose engine
// runs on the fake backend, to a client through the SDK's in-memory
// transports. No interpreter exists, so these tests pin what the tools
// answer before one would start: refusals and listings.
func connect(t *testing.T) (*mcp.ClientSession, *sandboxfake.Backend) {
	t.Helper()
	e, b := tooltest.FakeEngine(t, sandboxfake.Echo(""), true)
	m := session.NewManager(session.Deps{Engine: e, Languages: tooltest.Languages()}, session.Options{})
	t.Cleanup(m.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "sessiontools-test", Version: "0"}, nil)
	r := tool.NewRegistrar(srv)
	d := sessiontools.Deps{Sessions: m, Engine: e, Files: filetools.New(filetools.Deps{}), Isolated: true}
	sessiontools.RegisterSessions(r, d)
	sessiontools.RegisterContexts(r, d)
	return tooltest.Connect(t, srv), b
}

// TestSessionToolsRefuse: calls naming no live session, or a language
// sessions do not run, are isError results with the documented code and
// start nothing.
func TestSessionToolsRefuse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		tool     string
		args     map[string]any
		wantCode string
	}{
		{"send to an unknown session", "send_to_session", map[string]any{"session_id": "sess_none", "code": "1"}, "SESSION_NOT_FOUND"},
		{"close an unknown session", "close_session", map[string]any{"session_id": "sess_none"}, "SESSION_NOT_FOUND"},
		{"context in an unsupported language", "create_context", map[string]any{"language": "ruby", "name": "a"}, "INVALID_LANGUAGE"},
		{"context with a bad name", "create_context", map[string]any{"language": "python", "name": "a b/c"}, "INVALID_CONTEXT_NAME"},
		{"run in an unknown context", "run_code", map[string]any{"context_id": "nothing", "code": "1"}, "CONTEXT_NOT_FOUND"},
		{"send without code", "send_to_session", map[string]any{"session_id": "sess_none"}, "INVALID_PARAMS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, b := connect(t)
			got := tooltest.FailureOf(tooltest.Call(t, cs, tc.tool, tc.args))
			if !got.IsError || got.Code != tc.wantCode {
				t.Errorf("got %+v, want an isError %s", got, tc.wantCode)
			}
			if n := len(b.Specs()); n != 0 {
				t.Errorf("%d runs started, want none", n)
			}
		})
	}
}

// TestListSessionsEmpty: a server with no session lists none, as an empty
// list rather than null.
func TestListSessionsEmpty(t *testing.T) {
	cs, _ := connect(t)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_sessions", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("list_sessions: %v %v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`[]`, string(got["sessions"])); diff != "" {
		t.Errorf("sessions (-want +got)\n%s\nwhole result %s", diff, b)
	}
}
