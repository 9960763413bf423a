package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type sizeIn struct {
	N int `json:"n"`
}

type textOut struct {
	Text string `json:"text"`
}

// limitsServer is a Streamable HTTP MCP server on loopback with a tool
// that returns n bytes of text, one that never answers before its caller
// gives up, and one the policy denies.
func limitsServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "limits", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "text", Description: "Returns n bytes of text"},
		func(_ context.Context, _ *mcp.CallToolRequest, in sizeIn) (*mcp.CallToolResult, textOut, error) {
			return nil, textOut{strings.Repeat("x", in.N)}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Answers after 10 s or when cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, textOut, error) {
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
			return nil, textOut{"late"}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "drop_all", Description: "Denied by the policy"},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, textOut, error) {
			return nil, textOut{"dropped"}, nil
		})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCallLimits: the Manager, the one owner of the limits of upstream
// calls, applies the per-call timeout, the result cap and the policy,
// whoever calls.
func TestCallLimits(t *testing.T) {
	policy, err := ParsePolicy("limits.*,!*.drop_*")
	if err != nil {
		t.Fatal(err)
	}
	m := New([]ServerConfig{{Name: "limits", URL: limitsServer(t)}},
		&Options{Policy: policy, CallTimeout: 300 * time.Millisecond, MaxResultBytes: 100})
	m.Start()
	t.Cleanup(m.Close)
	cases := []struct {
		name, tool, args string
		want             string // the result, when wantErr is empty
		wantErr          string
	}{
		{name: "within the cap", tool: "text", args: `{"n":3}`, want: `{"text":"xxx"}`},
		{name: "over the cap", tool: "text", args: `{"n":200}`, wantErr: "limits.text returned 211 bytes, over the 100-byte result cap"},
		{name: "timeout", tool: "slow", args: `{}`, wantErr: "limits.slow timed out after 300ms"},
		{name: "denied", tool: "drop_all", args: `{}`, wantErr: "tool limits.drop_all is denied by CODEXEC_TOOL_POLICY (rule !*.drop_*)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			got, err := m.Call(ctx, "limits", c.tool, json.RawMessage(c.args))
			if c.wantErr != "" {
				if err == nil || err.Error() != c.wantErr {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, string(got)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
	if err := m.Allowed("limits", "dropAll"); err == nil || !strings.Contains(err.Error(), "denied") {
		t.Errorf("Allowed(dropAll) = %v, want the policy's denial of drop_all", err)
	}
}
