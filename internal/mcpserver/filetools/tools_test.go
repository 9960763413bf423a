package filetools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
	"github.com/codexec/codexec/internal/session"
)

// maxUpload is the upload limit of the test server: small, so the limit is
// reached with a few bytes.
const maxUpload = 64

// serveFiles serves the files toolset over a directory store and, with
// sessions, a session manager on the fake backend (no session is ever
// live: no interpreter exists), to a client through in-memory transports.
// It returns the store too, so a test can keep items as a run would.
func serveFiles(t *testing.T, sessions bool) (*mcp.ClientSession, files.Store) {
	t.Helper()
	store, err := files.NewDirStore(t.TempDir(), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	d := filetools.Deps{Config: config.Config{MaxUploadBytes: maxUpload, MaxDownloadBytes: 1 << 20}, Files: store}
	if sessions {
		e, _ := tooltest.FakeEngine(t, sandboxfake.Echo(""), true)
		d.Sessions = session.NewManager(session.Deps{Engine: e, Languages: tooltest.Languages()}, session.Options{})
		t.Cleanup(d.Sessions.Close)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "filetools-test", Version: "0"}, nil)
	filetools.New(d).Register(tool.NewRegistrar(srv))
	return tooltest.Connect(t, srv), store
}

// keep stores files as the kept artifacts of execution id, as the engine
// keeps what a run created: written into a workspace, then kept from it.
func keep(t *testing.T, store files.Store, id string, contents map[string]string) {
	t.Helper()
	ws, err := files.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	var paths []string
	for path, body := range contents {
		if _, err := ws.Write(path, strings.NewReader(body), files.WriteOptions{Max: 1 << 20}); err != nil {
			t.Fatalf("write %s: %v", path, err)
		}
		paths = append(paths, path)
	}
	if _, err := store.Keep(context.Background(), id, ws, paths); err != nil {
		t.Fatalf("keep: %v", err)
	}
}

// TestUploadStagesAFile: upload_file without a session stages the file as
// an upload (upload_id, size, sha256), and list_files without an id lists
// it as <upload_id>/<path>.
func TestUploadStagesAFile(t *testing.T) {
	cs, _ := serveFiles(t, true)
	var up filetools.UploadOut
	res := tooltest.Call(t, cs, "upload_file", map[string]any{"path": "data/in.txt", "content": "hello"})
	tooltest.Decode(t, res, &up)
	if res.IsError || !strings.HasPrefix(up.UploadID, "upl_") {
		t.Fatalf("upload_file: %s", tooltest.Text(res))
	}
	got := []any{up.Path, up.Size, up.SHA256}
	want := []any{"data/in.txt", int64(5), "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("upload result [path size sha256] (-want +got)\n%s", diff)
	}
	var list files.Listing
	tooltest.Decode(t, tooltest.Call(t, cs, "list_files", map[string]any{}), &list)
	if len(list.Entries) != 1 || list.Entries[0].Path != up.UploadID+"/data/in.txt" {
		t.Errorf("list_files: %+v, want the one upload", list.Entries)
	}
}

// TestDownloadKeptArtifact: download_file reads a run's kept file whole,
// or a range of it with next_offset saying where the rest starts, and
// list_files lists the run's files below a directory.
func TestDownloadKeptArtifact(t *testing.T) {
	cs, store := serveFiles(t, false)
	keep(t, store, "exec_kept", map[string]string{"out/report.txt": "0123456789", "out/sub/b.txt": "b", "top.txt": "t"})
	next := func(n int64) *int64 { return &n }
	for _, tc := range []struct {
		name     string
		args     map[string]any
		want     filetools.DownloadOut
		wantText string
	}{
		{"whole", map[string]any{"execution_id": "exec_kept", "path": "out/report.txt"},
			filetools.DownloadOut{URI: "codexec://executions/exec_kept/files/out/report.txt", Size: 10, Length: 10, MIMEType: "text/plain; charset=utf-8"},
			"0123456789"},
		{"range", map[string]any{"execution_id": "exec_kept", "path": "out/report.txt", "offset": 2, "length": 3},
			filetools.DownloadOut{URI: "codexec://executions/exec_kept/files/out/report.txt", Size: 10, Offset: 2, Length: 3,
				MIMEType: "text/plain; charset=utf-8", NextOffset: next(5)},
			"234"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tooltest.Call(t, cs, "download_file", tc.args)
			var got filetools.DownloadOut
			tooltest.Decode(t, res, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("download_file (-want +got)\n%s", diff)
			}
			if text := contentText(res); text != tc.wantText {
				t.Errorf("content %q, want %q", text, tc.wantText)
			}
		})
	}
	var list files.Listing
	tooltest.Decode(t, tooltest.Call(t, cs, "list_files", map[string]any{"execution_id": "exec_kept", "path": "out"}), &list)
	var paths []string
	for _, e := range list.Entries {
		paths = append(paths, e.Path)
	}
	if diff := cmp.Diff([]string{"out/report.txt", "out/sub/b.txt"}, paths, sortStrings); diff != "" {
		t.Errorf("list_files out/ (-want +got)\n%s", diff)
	}
}

// contentText is the file bytes a download result carries, as text or as
// an embedded resource's text.
func contentText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			return c.Text
		case *mcp.EmbeddedResource:
			return c.Resource.Text + string(c.Resource.Blob)
		}
	}
	return ""
}
