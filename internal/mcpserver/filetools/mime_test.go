package filetools

import (
	"bytes"
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
)

// TestMIMEAgreesEverywhere keeps files of every kind as one run's artifacts
// and asserts that the result's resource_link, resources/list,
// resources/read and download_file (whole, from an offset, and a range too
// short to sniff) all report the same media type, the one of the file's
// content.
func TestMIMEAgreesEverywhere(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + string(bytes.Repeat([]byte{0}, 600)))
	kinds := []struct {
		path string
		data []byte
		want string
	}{
		{"plot.png", png, "image/png"},
		{"blob.bin", append([]byte{0, 1, 2, 0xff}, bytes.Repeat([]byte{7}, 700)...), "application/octet-stream"},
		{"noext", []byte{0xfe, 0xff, 0, 9}, "application/octet-stream"},
		{"notes.txt", []byte("hello\n"), "text/plain; charset=utf-8"},
		{"data.json", []byte(`{"a": [1, 2]}`), "application/json"},
		{"table.csv", []byte("a,b\n1,2\n"), "text/csv; charset=utf-8"},
		{"fig.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "image/svg+xml"},
		{"README.md", []byte("# title\n"), "text/markdown; charset=utf-8"},
		{"doc.pdf", []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), "application/pdf"},
	}
	ctx := context.Background()
	store, err := files.NewDirStore(t.TempDir(), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	const id = "exec_mime"
	src, err := files.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var paths []string
	for _, k := range kinds {
		if _, err := src.Write(k.path, bytes.NewReader(k.data), files.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, k.path)
	}
	if _, err := store.Keep(ctx, id, src, paths); err != nil {
		t.Fatal(err)
	}
	fs := New(Deps{Config: config.Defaults(t.TempDir()), Files: store})
	want := map[string]string{}
	for _, k := range kinds {
		want[k.path] = k.want
	}
	places := map[string]map[string]string{
		"resource_link":     linkMIMEs(ctx, fs, id, paths),
		"resources/list":    listMIMEs(ctx, fs),
		"resources/read":    {},
		"download_file":     {},
		"download_file@+2":  {},
		"download_file[:4]": {},
	}
	for _, p := range paths {
		uri := fileURI("executions", id, p)
		rr, err := fs.readResource(ctx, &mcp.ReadResourceRequest{Params: &mcp.ReadResourceParams{URI: uri}})
		if err != nil {
			t.Fatal(err)
		}
		places["resources/read"][p] = rr.Contents[0].MIMEType
		for name, r := range map[string][2]int64{"download_file": {0, 0}, "download_file@+2": {2, 0}, "download_file[:4]": {0, 4}} {
			_, out, err := fs.downloadFile(ctx, nil, DownloadIn{Path: p, ExecutionID: id, Offset: r[0], Length: r[1]})
			if err != nil {
				t.Fatal(err)
			}
			places[name][p] = out.MIMEType
		}
	}
	for place, got := range places {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", place, diff)
		}
	}
}

func linkMIMEs(ctx context.Context, fs *Files, id string, paths []string) map[string]string {
	r := fs.WithFiles(ctx, &mcp.CallToolResult{}, engine.Result{ExecutionID: id, Artifacts: paths})
	got := map[string]string{}
	for _, c := range r.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			got[l.Name] = l.MIMEType
		}
	}
	return got
}

func listMIMEs(ctx context.Context, fs *Files) map[string]string {
	got := map[string]string{}
	for _, r := range fs.keptResources(ctx) {
		got[r.Name] = r.MIMEType
	}
	return got
}
