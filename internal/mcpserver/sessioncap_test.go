package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/mcpserver"
)

const initBody = `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// post sends one Streamable HTTP request and returns its status, the
// session id it names and the JSON-RPC error code of a JSON body (0: none).
func post(t *testing.T, method, url, sessionID, body string) (int, string, int) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var r struct{ Error struct{ Code int } }
	_ = json.Unmarshal(data, &r)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), r.Error.Code
}

// TestHTTPSessionCap: with a cap of 1, a request that opens no session
// (a ping without initialize) leaves the slot free; a second initialize
// closes the first, idle session to make room (the first's next request
// gets 404, as a session that ended); a session with a stream open is busy,
// so with it the only one an initialize is refused with 429 and -32000
// naming the setting, until the stream ends; a DELETE frees the slot.
func TestHTTPSessionCap(t *testing.T) {
	s := newFakeServer(t, fakeOptions{})
	srv := httptest.NewServer(s.HTTPHandler(mcpserver.HTTPOptions{MaxSessionsPerPrincipal: 1}))
	t.Cleanup(srv.Close)

	type step struct{ Status, Code int }
	var got []step
	do := func(method, sid, body string) string {
		st, id, code := post(t, method, srv.URL, sid, body)
		got = append(got, step{st, code})
		return id
	}
	do("POST", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	first := do("POST", "", initBody)
	second := do("POST", "", initBody)
	if n := s.LiveSessions(); n != 1 {
		t.Errorf("%d MCP sessions live after the second initialize closed the first, want 1", n)
	}
	do("POST", first, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	do("POST", second, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	stream := openStream(t, srv.URL, second)
	do("POST", "", initBody)
	stream.Body.Close()
	third := initAfterStreamEnds(t, srv.URL)
	do("DELETE", third, "")
	do("POST", "", initBody)
	want := []step{{200, 0}, {200, 0}, {200, 0}, {404, 0}, {200, 0}, {429, -32000}, {204, 0}, {200, 0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}

// openStream opens the standalone SSE stream (GET) of session sid and
// returns it open; the caller closes its body.
func openStream(t *testing.T, url, sid string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// initAfterStreamEnds initializes until a session is admitted (the server
// sees a closed stream end a moment after the client closes it) and
// returns its id.
func initAfterStreamEnds(t *testing.T, url string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, id, _ := post(t, "POST", url, "", initBody)
		if st == 200 {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("initialize still %d 10s after the only stream closed", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
