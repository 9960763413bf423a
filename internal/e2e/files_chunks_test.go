package e2e

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUploadInChunks: a file sent to a session in chunks (offset = the
// size so far) arrives whole, as the sandboxed code and download_file see
// it; every bad chunk is refused with a clear error and leaves the file as
// it was.
func TestUploadInChunks(t *testing.T) {
	s := start(t, "CODEXEC_MAX_UPLOAD_BYTES=4m")
	sid := s.startSession("python").SessionID
	data := randomBytes(t, 3<<20+123)
	const chunk = 1 << 20
	for off := 0; off < len(data); off += chunk {
		args := map[string]any{"session_id": sid, "path": "in/big.bin", "content_base64": base64.StdEncoding.EncodeToString(data[off:min(off+chunk, len(data))])}
		if off > 0 {
			args["offset"] = off
		}
		up, res := s.upload(args)
		if res.IsError || up.Size != int64(min(off+chunk, len(data))) || (off > 0) != (up.SHA256 == "") {
			t.Fatalf("chunk at %d: %+v %s", off, up, text(res))
		}
	}
	size := len(data)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for _, c := range []struct {
		name     string
		args     map[string]any
		code     string
		contains string
	}{
		{"offset short of the end", map[string]any{"session_id": sid, "offset": size - 1, "content": "x"}, "INVALID_PARAMS", "goes at offset 3145851"},
		{"offset past the end", map[string]any{"session_id": sid, "offset": size + 1, "content": "x"}, "INVALID_PARAMS", "goes at offset 3145851"},
		{"negative offset", map[string]any{"session_id": sid, "offset": -1, "content": "x"}, "INVALID_PARAMS", "offset -1"},
		{"corrupt base64", map[string]any{"session_id": sid, "offset": size, "content_base64": b64("abcdef") + "!!!!"}, "INVALID_PARAMS", "not valid base64"},
		{"past the upload limit", map[string]any{"session_id": sid, "offset": size, "content_base64": base64.StdEncoding.EncodeToString(make([]byte, 1<<20))}, "LIMIT_EXCEEDED", "CODEXEC_MAX_UPLOAD_BYTES"},
		{"mode on a chunk", map[string]any{"session_id": sid, "offset": size, "content": "x", "mode": "755"}, "INVALID_PARAMS", "first chunk"},
		{"no session", map[string]any{"offset": size, "content": "x"}, "INVALID_PARAMS", "session_id"},
		{"missing file", map[string]any{"session_id": sid, "offset": 5, "content": "x", "path": "none.bin"}, "FILE_NOT_FOUND", "none.bin"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, ok := c.args["path"]; !ok {
				c.args["path"] = "in/big.bin"
			}
			_, res := s.upload(c.args)
			if errCode(res) != c.code || !strings.Contains(text(res), c.contains) {
				t.Errorf("got %s %s, want %s containing %q", errCode(res), text(res), c.code, c.contains)
			}
		})
	}
	r, _ := s.send(sid, "import hashlib; print(hashlib.sha256(open('in/big.bin','rb').read()).hexdigest())", nil)
	if strings.TrimSpace(r.Stdout) != sum(data) {
		t.Fatalf("the session reads %q, want sha256 %s", r.Stdout, sum(data))
	}
	checkSame(t, downloadRanges(t, len(data), func(args map[string]any) *mcp.CallToolResult {
		args["session_id"], args["path"] = sid, "in/big.bin"
		return s.call("download_file", args)
	}), data)
}
