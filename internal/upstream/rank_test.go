package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestManagerRank: the Manager's ranking sees the tools' annotations (a
// destructive delete tool ranks below its create twin for a store intent)
// and a tool added while the server runs (listChanged rebuilds the index).
func TestManagerRank(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	no, yes := false, true
	handler := func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, textOut, error) {
		return nil, textOut{"ok"}, nil
	}
	mcp.AddTool(s, &mcp.Tool{Name: "delete_notes", Description: "Delete notes from the notebook",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}}, handler)
	mcp.AddTool(s, &mcp.Tool{Name: "create_notes", Description: "Create notes in the notebook",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &no}}, handler)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(srv.Close)
	m := New([]ServerConfig{{Name: "notes", URL: srv.URL}}, nil)
	m.Start()
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	names := func(q string) []string {
		var out []string
		for _, tl := range m.Rank(ctx, q, 5) {
			out = append(out, tl.FullName())
		}
		return out
	}
	if diff := cmp.Diff([]string{"notes.create_notes", "notes.delete_notes"}, names("store notes in the notebook")); diff != "" {
		t.Errorf("store intent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"notes.delete_notes", "notes.create_notes"}, names("delete notes from the notebook")); diff != "" {
		t.Errorf("delete intent (-want +got):\n%s", diff)
	}
	mcp.AddTool(s, &mcp.Tool{Name: "export_notebook", Description: "Export the notebook as markdown"}, handler)
	for names("export as markdown") == nil {
		if ctx.Err() != nil {
			t.Fatal("the added tool never ranked")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if diff := cmp.Diff([]string{"notes.export_notebook"}, names("export as markdown")); diff != "" {
		t.Errorf("added tool (-want +got):\n%s", diff)
	}
}
