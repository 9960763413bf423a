package e2e

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/pgtest"
)

// transferDo sends one request to a transfer URL with token ("" = none)
// and returns status, body and headers.
func transferDo(t testing.TB, method, url, token string, body []byte, hdr map[string]string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := httpClient(token).Do(req)
	if err != nil {
		t.Fatalf("%s transfer URL: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// transferRefused checks a refused transfer request's status and code.
func transferRefused(t testing.TB, what string, status int, body []byte, wantStatus int, wantCode string) {
	t.Helper()
	var e struct{ Error, Code string }
	if err := json.Unmarshal(body, &e); err != nil || status != wantStatus || e.Code != wantCode || e.Error == "" {
		t.Errorf("%s: got %d %s, want %d %s", what, status, body, wantStatus, wantCode)
	}
}

// urlOf calls tool with args and returns the URL field key of its result.
func urlOf(t testing.TB, cs *mcp.ClientSession, tool, key string, args map[string]any) (string, map[string]any) {
	t.Helper()
	res := callTool(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s %v: %s", tool, args, text(res))
	}
	out := structured(t, res)
	u, _ := out[key].(string)
	if !strings.Contains(u, "/files/") || out["url_expires_at"] == nil {
		t.Fatalf("%s: no %s in %v", tool, key, out)
	}
	return u, out
}

// TestHTTPFileTransferURLs: over HTTP with bearer auth, upload_file and
// download_file with transfer "url" move a file's bytes outside MCP: a PUT
// of the owner's token lands in the session (code reads it) or stages an
// upload (a run gets it), a GET returns a file code made byte for byte
// (Range too); each URL serves once, another principal's token and no token
// are refused without using it up, an expired URL is refused, and no URL
// can name a path outside the workspace.
func TestHTTPFileTransferURLs(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_TRANSFER_URL_TTL=3s", "CODEXEC_MAX_UPLOAD_BYTES=4m")
	alice := s.mustConnect(aliceToken)
	sid := tenantOK(t, alice, "start_session", map[string]any{"language": "python"})["session_id"].(string)

	// Upload into the session, then code reads it.
	data := randomBytes(t, 3<<20+7)
	up, _ := urlOf(t, alice, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "in/data.bin", "transfer": "url"})
	if !strings.HasPrefix(up, s.URL+"/files/") {
		t.Errorf("upload_url %s is not on the server's listener %s", up, s.URL)
	}
	st, b, _ := transferDo(t, "PUT", up, bobToken, data, nil)
	transferRefused(t, "bob's PUT", st, b, http.StatusForbidden, "NOT_ALLOWED")
	st, b, _ = transferDo(t, "PUT", up, "", data, nil)
	if st != http.StatusUnauthorized {
		t.Errorf("PUT without a token: %d %s", st, b)
	}
	st, b, _ = transferDo(t, "PUT", up, aliceToken, data, nil)
	var w uploadOut
	if err := json.Unmarshal(b, &w); st != http.StatusOK || err != nil || w.Path != "in/data.bin" || w.Size != int64(len(data)) || w.SHA256 != sum(data) {
		t.Fatalf("alice's PUT: %d %s", st, b)
	}
	st, b, _ = transferDo(t, "PUT", up, aliceToken, data, nil)
	transferRefused(t, "second PUT", st, b, http.StatusNotFound, "FILE_NOT_FOUND")
	r := tenantOK(t, alice, "execute_code", map[string]any{"session_id": sid, "code": "import hashlib; print(hashlib.sha256(open('in/data.bin','rb').read()).hexdigest())"})
	if got := strings.TrimSpace(r["stdout"].(string)); got != sum(data) {
		t.Errorf("code read sha256 %s, want %s", got, sum(data))
	}

	// Code makes a file; the download URL serves it byte for byte.
	r = tenantOK(t, alice, "execute_code", map[string]any{"session_id": sid,
		"code": "import os, hashlib; b = os.urandom(2*1024*1024+3); open('out.bin','wb').write(b); print(hashlib.sha256(b).hexdigest())"})
	made := strings.TrimSpace(r["stdout"].(string))
	down, out := urlOf(t, alice, "download_file", "download_url", map[string]any{"session_id": sid, "path": "out.bin", "transfer": "url"})
	if out["size"].(float64) != 2*1024*1024+3 {
		t.Errorf("download_file size %v", out["size"])
	}
	st, b, _ = transferDo(t, "GET", down, bobToken, nil, nil)
	transferRefused(t, "bob's GET", st, b, http.StatusForbidden, "NOT_ALLOWED")
	st, b, h := transferDo(t, "GET", down, aliceToken, nil, nil)
	if st != http.StatusOK || sum(b) != made || h.Get("Content-Length") != "2097155" || h.Get("Content-Type") != "application/octet-stream" {
		t.Errorf("alice's GET: %d, %d bytes, sha256 %s (want %s), headers %v", st, len(b), sum(b), made, h)
	}
	st, b, _ = transferDo(t, "GET", down, aliceToken, nil, nil)
	transferRefused(t, "second GET", st, b, http.StatusNotFound, "FILE_NOT_FOUND")

	// A range of the uploaded file.
	down, _ = urlOf(t, alice, "download_file", "download_url", map[string]any{"session_id": sid, "path": "in/data.bin", "transfer": "url"})
	st, b, _ = transferDo(t, "GET", down, aliceToken, nil, map[string]string{"Range": "bytes=10-19"})
	if st != http.StatusPartialContent || !bytes.Equal(b, data[10:20]) {
		t.Errorf("Range GET: %d %x", st, b)
	}

	// Staged upload (no session), then a one-shot run gets it.
	up, _ = urlOf(t, alice, "upload_file", "upload_url", map[string]any{"path": "staged.txt", "transfer": "url"})
	st, b, _ = transferDo(t, "PUT", up, aliceToken, []byte("staged bytes"), nil)
	if err := json.Unmarshal(b, &w); st != http.StatusOK || err != nil || !strings.HasPrefix(w.UploadID, "upl_") {
		t.Fatalf("staged PUT: %d %s", st, b)
	}
	r = tenantOK(t, alice, "execute_code", map[string]any{"language": "python", "code": "print(open('staged.txt').read())", "files": []string{w.UploadID}})
	if strings.TrimSpace(r["stdout"].(string)) != "staged bytes" {
		t.Errorf("run with the staged upload printed %q", r["stdout"])
	}

	// A one-shot run's kept file, read from the store in ranges.
	r = tenantOK(t, alice, "execute_code", map[string]any{"language": "python",
		"code": "import os, hashlib; b = os.urandom(3*1024*1024+5); open('kept.bin','wb').write(b); print(hashlib.sha256(b).hexdigest())"})
	made = strings.TrimSpace(r["stdout"].(string))
	down, _ = urlOf(t, alice, "download_file", "download_url", map[string]any{"execution_id": r["execution_id"], "path": "kept.bin", "transfer": "url"})
	if st, b, _ = transferDo(t, "GET", down, aliceToken, nil, nil); st != http.StatusOK || sum(b) != made {
		t.Errorf("GET of a kept artifact: %d, %d bytes, sha256 %s want %s", st, len(b), sum(b), made)
	}

	// Past CODEXEC_MAX_UPLOAD_BYTES, announced or streamed, nothing is written.
	big := randomBytes(t, 4<<20+1)
	for _, announced := range []bool{true, false} {
		up, _ = urlOf(t, alice, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "big.bin", "transfer": "url"})
		st, b = putBody(t, up, aliceToken, big, announced)
		transferRefused(t, "oversized PUT", st, b, http.StatusRequestEntityTooLarge, "LIMIT_EXCEEDED")
	}
	if res := callTool(t, alice, "download_file", map[string]any{"session_id": sid, "path": "big.bin"}); !res.IsError {
		t.Error("an oversized upload left a file behind")
	}

	// Expired.
	down, _ = urlOf(t, alice, "download_file", "download_url", map[string]any{"session_id": sid, "path": "out.bin", "transfer": "url"})
	time.Sleep(3500 * time.Millisecond)
	st, b, _ = transferDo(t, "GET", down, aliceToken, nil, nil)
	transferRefused(t, "expired GET", st, b, http.StatusNotFound, "FILE_NOT_FOUND")

	// No URL names a path outside the workspace, and made-up tokens serve nothing.
	for _, c := range []struct{ tool, path string }{{"upload_file", "../escape.txt"}, {"download_file", "../../../etc/passwd"}, {"upload_file", "/etc/passwd"}} {
		res := callTool(t, alice, c.tool, map[string]any{"session_id": sid, "path": c.path, "transfer": "url"})
		if code, _ := toolError(t, res); code != "INVALID_PARAMS" && code != "NOT_ALLOWED" && code != "FILE_NOT_FOUND" {
			t.Errorf("%s %s: %s", c.tool, c.path, text(res))
		}
	}
	for _, p := range []string{"/files/" + strings.Repeat("A", 43), "/files/x/../../etc/passwd"} {
		st, b, _ = transferDo(t, "GET", s.URL+p, aliceToken, nil, nil)
		if st < 400 || bytes.Contains(b, []byte("root:")) {
			t.Errorf("GET %s: %d %s", p, st, b)
		}
	}
	// Bytes and a URL at once are refused; so is an unknown transfer.
	res := callTool(t, alice, "upload_file", map[string]any{"session_id": sid, "path": "x", "content": "x", "transfer": "url"})
	if code, _ := toolError(t, res); code != "INVALID_PARAMS" {
		t.Errorf("content with transfer url: %s", text(res))
	}
	res = callTool(t, alice, "download_file", map[string]any{"session_id": sid, "path": "out.bin", "transfer": "ftp"})
	if code, _ := toolError(t, res); code != "INVALID_PARAMS" {
		t.Errorf("transfer ftp: %s", text(res))
	}
	if strings.Contains(s.Stderr.String(), strings.TrimPrefix(up, s.URL+"/files/")) {
		t.Error("the server log holds a whole transfer token")
	}
}

// TestStdioFileTransferURLs: over stdio, transfer "url" is served on a
// loopback listener opened at the first such call: a PUT lands the bytes
// in the session (code reads them), a GET returns them, each URL serves
// once; the listener is on loopback, serves nothing but ticket paths, and
// refuses requests a web page could send.
// With CODEXEC_TRANSFER_LISTEN=off the call says the feature is off, and a
// non-loopback address is refused at start.
func TestStdioFileTransferURLs(t *testing.T) {
	s := start(t)
	sid := s.startSession("python").SessionID
	data := randomBytes(t, 3<<20)
	up, _ := urlOf(t, s.Session, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "in.bin", "transfer": "url"})
	if !strings.HasPrefix(up, "http://127.0.0.1:") {
		t.Fatalf("upload_url %s is not on loopback", up)
	}
	if st, body, _ := transferDo(t, http.MethodPut, up, "", data, nil); st != http.StatusOK || !strings.Contains(string(body), `"size":3145728`) {
		t.Fatalf("PUT: %d %s", st, body)
	}
	st, body, _ := transferDo(t, http.MethodPut, up, "", data, nil)
	transferRefused(t, "second PUT", st, body, http.StatusNotFound, "FILE_NOT_FOUND")
	if got, _ := s.send(sid, "import hashlib; print(hashlib.sha256(open('in.bin','rb').read()).hexdigest())", nil); strings.TrimSpace(got.Stdout) != sum(data) {
		t.Fatalf("the session read %q", got.Stdout)
	}
	down, _ := urlOf(t, s.Session, "download_file", "download_url", map[string]any{"session_id": sid, "path": "in.bin", "transfer": "url"})
	if st, got, _ := transferDo(t, http.MethodGet, down, "", nil, nil); st != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("GET: %d, %d bytes", st, len(got))
	}
	base := up[:strings.Index(up, "/files/")]
	if st, _, _ := transferDo(t, http.MethodGet, base+"/mcp", "", nil, nil); st != http.StatusNotFound {
		t.Errorf("GET /mcp on the transfer listener: %d, want 404", st)
	}
	// A web page's request (it carries an Origin) is refused and leaves
	// the URL usable.
	down, _ = urlOf(t, s.Session, "download_file", "download_url", map[string]any{"session_id": sid, "path": "in.bin", "transfer": "url"})
	st, body, _ = transferDo(t, http.MethodGet, down, "", nil, map[string]string{"Origin": "http://page.example"})
	transferRefused(t, "GET with an Origin", st, body, http.StatusForbidden, "NOT_ALLOWED")
	if st, got, _ := transferDo(t, http.MethodGet, down, "", nil, nil); st != http.StatusOK || !bytes.Equal(got, data) {
		t.Fatalf("GET after a refused one: %d, %d bytes", st, len(got))
	}

	off := start(t, "CODEXEC_TRANSFER_LISTEN=off")
	res := off.call("upload_file", map[string]any{"path": "a.txt", "transfer": "url"})
	if code, _ := toolError(t, res); code != "NOT_ENABLED" {
		t.Errorf("upload_file transfer url with the listener off: %s", text(res))
	}
	out, err := exec.Command(binary(t), "serve", "--transfer-listen", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CODEXEC_TRANSFER_LISTEN must be off or a loopback") {
		t.Errorf("a wildcard transfer address: %v %s", err, out)
	}
}

// TestHTTPReplicaFileTransferURLs: with two replicas sharing the session
// registry, upload_file and download_file with transfer "url" for a session
// held by the other replica are forwarded there, and the URLs they return
// point at that replica (which alone holds them) and work there.
func TestHTTPReplicaFileTransferURLs(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	tokens := "CODEXEC_AUTH_TOKENS=" + tokenFile(t)
	a := startHTTP(t, "", replicaEnv(dsn, "r-a", tokens)...)
	b := startHTTP(t, "", replicaEnv(dsn, "r-b", tokens)...)
	aliceA, aliceB := a.mustConnect(aliceToken), b.mustConnect(aliceToken)
	sid := tout(t, aliceA, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	data := randomBytes(t, 1<<20)
	up, _ := urlOf(t, aliceB, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "r.bin", "transfer": "url"})
	if !strings.HasPrefix(up, a.URL+"/files/") {
		t.Fatalf("upload_url %s is not on the replica holding the session (%s)", up, a.URL)
	}
	if st, body, _ := transferDo(t, "PUT", up, aliceToken, data, nil); st != http.StatusOK {
		t.Fatalf("PUT: %d %s", st, body)
	}
	down, _ := urlOf(t, aliceB, "download_file", "download_url", map[string]any{"session_id": sid, "path": "r.bin", "transfer": "url"})
	if !strings.HasPrefix(down, a.URL+"/files/") {
		t.Fatalf("download_url %s is not on the replica holding the session (%s)", down, a.URL)
	}
	// On the other replica the URL is unknown: it was issued where the session is.
	wrong := b.URL + strings.TrimPrefix(down, a.URL)
	st, body, _ := transferDo(t, "GET", wrong, aliceToken, nil, nil)
	transferRefused(t, "GET on the other replica", st, body, http.StatusNotFound, "FILE_NOT_FOUND")
	if st, got, _ := transferDo(t, "GET", down, aliceToken, nil, nil); st != http.StatusOK || !bytes.Equal(got, data) {
		t.Errorf("GET: %d, %d bytes", st, len(got))
	}
}

// putBody PUTs body to url, with its Content-Length or (announced false)
// streamed without one.
func putBody(t testing.TB, url, token string, body []byte, announced bool) (int, []byte) {
	t.Helper()
	var r io.Reader = bytes.NewReader(body)
	if !announced {
		r = io.MultiReader(r) // hides the length: chunked
	}
	req, err := http.NewRequest("PUT", url, r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := httpClient(token).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestHTTPUploadURLDiskLimit: a PUT streamed without a length is bounded by
// what the workspace's CODEXEC_DISK_LIMIT leaves, and leaves nothing behind.
func TestHTTPUploadURLDiskLimit(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_DISK_LIMIT=64k")
	cs := s.mustConnect("")
	sid := tenantOK(t, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	up, _ := urlOf(t, cs, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "big.bin", "transfer": "url"})
	st, b := putBody(t, up, "", randomBytes(t, 100<<10), false)
	transferRefused(t, "streamed PUT past the disk limit", st, b, http.StatusRequestEntityTooLarge, "LIMIT_EXCEEDED")
	if res := callTool(t, cs, "download_file", map[string]any{"session_id": sid, "path": "big.bin"}); !res.IsError {
		t.Error("the refused upload left a file behind")
	}
	up, _ = urlOf(t, cs, "upload_file", "upload_url", map[string]any{"session_id": sid, "path": "small.bin", "transfer": "url"})
	if st, b = putBody(t, up, "", randomBytes(t, 8<<10), false); st != http.StatusOK {
		t.Errorf("streamed PUT within the limit: %d %s", st, b)
	}
}
