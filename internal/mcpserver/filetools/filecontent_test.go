package filetools

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mimetype"
)

func TestFileURIRoundTrip(t *testing.T) {
	cases := []struct{ kind, id, path string }{
		{"executions", "exec_1", "out/result.bin"},
		{"sessions", "ctx-AB-1", "a b/c%d?.txt"},
		{"sessions", "sess_x", "plots/figure-1.png"},
	}
	for _, c := range cases {
		uri := fileURI(c.kind, c.id, c.path)
		kind, id, p, err := parseFileURI(uri)
		if err != nil || kind != c.kind || id != c.id || p != c.path {
			t.Errorf("%s → %q %q %q %v", uri, kind, id, p, err)
		}
	}
	for _, bad := range []string{"file:///etc/passwd", "codexec://scripts/x/files/a", "codexec://sessions/x"} {
		if _, _, _, err := parseFileURI(bad); err == nil {
			t.Errorf("parseFileURI(%q) accepted", bad)
		}
	}
}

func TestFileContentKinds(t *testing.T) {
	cases := []struct {
		name  string
		data  []byte
		whole bool
		want  string
	}{
		{"a.txt", []byte("héllo"), true, "text"},
		{"a.png", []byte("\x89PNG\r\n\x1a\n"), true, "image"},
		{"a.png", []byte("\x89PNG\r\n\x1a\n"), false, "blob"},
		{"a.png", []byte("not a png"), true, "text"},
		{"a.bin", []byte{0, 1, 2}, true, "blob"},
		{"a.txt", []byte("a\x00b"), true, "blob"},
	}
	for _, c := range cases {
		got := fileContent("codexec://x", c.data, c.whole, mimetype.Detect(c.name, c.data))
		kind := "?"
		switch got.(type) {
		case *mcp.TextContent:
			kind = "text"
		case *mcp.ImageContent:
			kind = "image"
		case *mcp.EmbeddedResource:
			kind = "blob"
		}
		if kind != c.want {
			t.Errorf("%s %q whole=%v: %s, want %s", c.name, c.data, c.whole, kind, c.want)
		}
	}
}
