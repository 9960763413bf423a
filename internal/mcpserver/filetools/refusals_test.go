package filetools_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
)

var sortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestFileToolsRefuse: each way a files call is refused reaches the client
// as an isError result with the documented code, and a refused upload
// stores nothing.
func TestFileToolsRefuse(t *testing.T) {
	big := strings.Repeat("x", maxUpload+1)
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		sessions   bool
		want       string
		// inMessage must appear in the message (it names the fix).
		inMessage string
	}{
		{"upload escaping the workspace", "upload_file", map[string]any{"path": "../escape.txt", "content": "x"}, true, tool.CodeInvalidParams, ""},
		{"upload to an absolute path", "upload_file", map[string]any{"path": "/etc/passwd", "content": "x"}, true, tool.CodeInvalidParams, ""},
		{"upload over the size limit", "upload_file", map[string]any{"path": "big.txt", "content": big}, true, tool.CodeLimitExceeded, "CODEXEC_MAX_UPLOAD_BYTES"},
		{"upload with both contents", "upload_file", map[string]any{"path": "a", "content": "x", "content_base64": "eA=="}, true, tool.CodeInvalidParams, "not both"},
		{"upload with corrupt base64", "upload_file", map[string]any{"path": "a", "content_base64": "a*b="}, true, tool.CodeInvalidParams, "content_base64"},
		{"upload with a bad mode", "upload_file", map[string]any{"path": "a", "content": "x", "mode": "999"}, true, tool.CodeInvalidParams, "mode"},
		{"chunk without a session", "upload_file", map[string]any{"path": "a", "content": "x", "offset": 4}, true, tool.CodeInvalidParams, "session_id"},
		{"upload into an unknown session", "upload_file", map[string]any{"path": "a", "content": "x", "session_id": "sess_none"}, true, tool.CodeSessionNotFound, ""},
		{"upload into a session without sessions", "upload_file", map[string]any{"path": "a", "content": "x", "session_id": "sess_none"}, false, tool.CodeNotEnabled, ""},
		{"upload by url without transfers", "upload_file", map[string]any{"path": "a", "transfer": "url"}, true, tool.CodeNotEnabled, ""},
		{"download of an unknown execution", "download_file", map[string]any{"path": "a", "execution_id": "exec_none"}, true, tool.CodeExecutionNotFound, ""},
		{"download of a missing file", "download_file", map[string]any{"path": "missing.txt", "execution_id": "exec_kept"}, true, tool.CodeFileNotFound, ""},
		{"download escaping the item", "download_file", map[string]any{"path": "../exec_other/x", "execution_id": "exec_kept"}, true, tool.CodeInvalidParams, ""},
		{"download naming two targets", "download_file", map[string]any{"path": "a", "execution_id": "exec_kept", "session_id": "s"}, true, tool.CodeInvalidParams, "not both"},
		{"download naming no target", "download_file", map[string]any{"path": "a"}, true, tool.CodeInvalidParams, "execution_id"},
		{"list of an unknown session", "list_files", map[string]any{"session_id": "sess_none"}, true, tool.CodeSessionNotFound, ""},
		{"list of a limit of the wrong type", "list_files", map[string]any{"limit": "9"}, true, tool.CodeInvalidParams, "limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, store := serveFiles(t, tc.sessions)
			keep(t, store, "exec_kept", map[string]string{"out.txt": "kept"})
			got := tooltest.FailureOf(tooltest.Call(t, cs, tc.tool, tc.args))
			if !got.IsError || got.Code != tc.want || !strings.Contains(got.Message, tc.inMessage) {
				t.Errorf("got %+v, want an isError %s naming %q", got, tc.want, tc.inMessage)
			}
			var ids []string
			for _, it := range store.List(context.Background()) {
				ids = append(ids, it.ID)
			}
			if !slices.Equal(ids, []string{"exec_kept"}) {
				t.Errorf("items after a refused call: %v, want only exec_kept", ids)
			}
		})
	}
}

// TestStagedUploadsAreSeparate: a staged upload never replaces another:
// the same path twice gives two uploads, each with its own bytes.
func TestStagedUploadsAreSeparate(t *testing.T) {
	cs, store := serveFiles(t, false)
	var ids []string
	for _, body := range []string{"one", "two"} {
		var up struct {
			UploadID string `json:"upload_id"`
		}
		tooltest.Decode(t, tooltest.Call(t, cs, "upload_file", map[string]any{"path": "same.txt", "content": body}), &up)
		ids = append(ids, up.UploadID)
	}
	var got []string
	for _, id := range ids {
		data, _, err := store.Read(context.Background(), id, "same.txt", 0, 100, 100)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(data))
	}
	if diff := cmp.Diff([]string{"one", "two"}, got); diff != "" || ids[0] == ids[1] {
		t.Errorf("uploads %v (-want +got)\n%s", ids, diff)
	}
}

// TestBrokenStoreIsInternal: an upload the server cannot store (its store
// directory was replaced by a file) is the server's failure, answered as
// INTERNAL_ERROR, never blamed on the caller's arguments.
func TestBrokenStoreIsInternal(t *testing.T) {
	dir := t.TempDir()
	store, err := files.NewDirStore(dir, files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	srv := mcp.NewServer(&mcp.Implementation{Name: "filetools-test", Version: "0"}, nil)
	filetools.New(filetools.Deps{Config: config.Config{MaxUploadBytes: maxUpload}, Files: store}).Register(tool.NewRegistrar(srv))
	cs := tooltest.Connect(t, srv)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	got := tooltest.FailureOf(tooltest.Call(t, cs, "upload_file", map[string]any{"path": "a.txt", "content": "x"}))
	if !got.IsError || got.Code != tool.CodeInternal {
		t.Errorf("got %+v, want an isError %s", got, tool.CodeInternal)
	}
}
