package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawInit POSTs an initialize with token and returns the status and the
// JSON-RPC error of the body (zero when it is not one).
func rawInit(t *testing.T, s *httpServer, token string) (int, rpcErr) {
	t.Helper()
	status, body, _ := do(t, "POST", s.URL+"/mcp", initBody, mcpHeaders(map[string]string{"Authorization": "Bearer " + token}))
	var r struct {
		ID    json.RawMessage
		Error *rpcErr
	}
	if json.Unmarshal([]byte(body), &r) != nil || r.Error == nil {
		return status, rpcErr{}
	}
	r.Error.ID = string(r.ID)
	return status, *r.Error
}

type rpcErr struct {
	ID      string
	Code    int
	Message string
}

// rawInitID POSTs an initialize with token and returns the status and the
// session id it opened.
func rawInitID(t *testing.T, s *httpServer, token string) (int, string) {
	t.Helper()
	status, _, h := do(t, "POST", s.URL+"/mcp", initBody, mcpHeaders(map[string]string{"Authorization": "Bearer " + token}))
	return status, h.Get("Mcp-Session-Id")
}

// rawPing POSTs a ping in session sid with token and returns the status.
func rawPing(t *testing.T, s *httpServer, token, sid string) int {
	t.Helper()
	status, _, _ := do(t, "POST", s.URL+"/mcp", `{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		mcpHeaders(map[string]string{"Authorization": "Bearer " + token, "Mcp-Session-Id": sid}))
	return status
}

// connectNoStream opens an MCP session (the protocol revision with
// sessions) over Streamable HTTP with token and without the standalone SSE
// stream, so that it is busy only while a
// request of it is in flight; closed at cleanup.
func (s *httpServer) connectNoStream(token string) *mcp.ClientSession {
	s.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-nostream", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: httpClient(token),
		MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: legacyVersion})
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	s.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// TestHTTPMCPSessionCapPerPrincipal: a principal's MCP sessions are capped
// by CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL, but a client that initializes
// in a loop without DELETE does not lock the principal out: at the cap the
// least recently used idle session is closed (its next request gets 404)
// and the new one is admitted, so after 200 such initializes a new client
// works. A session with a request in flight is never the one closed. Only
// when every session is busy (here: SDK clients, which keep their SSE
// stream open) is an initialize refused, with 429 and a JSON-RPC error
// naming the setting; closing one (DELETE) frees its slot.
func TestHTTPMCPSessionCapPerPrincipal(t *testing.T) {
	sameInEveryMode(t, "pins subprocess mode")
	const max = 8
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_SANDBOX_MODE=subprocess",
		"CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=8")

	// A session with a call in flight, then a crash loop of initializes.
	busy := s.connectNoStream(bobToken)
	done := make(chan error, 1)
	go func() {
		r, err := callExec(t, busy, "bash", "sleep 4; echo survived")
		if err == nil && r.Stdout != "survived\n" {
			err = fmt.Errorf("result %+v", r)
		}
		done <- err
	}()
	time.Sleep(time.Second) // the call is in flight
	var first string
	for i := range 200 {
		status, sid := rawInitID(t, s, bobToken)
		if status != 200 || sid == "" {
			t.Fatalf("initialize %d of a crash loop: status %d", i, status)
		}
		if i == 0 {
			first = sid
		}
	}
	if err := <-done; err != nil {
		t.Errorf("the call in flight while its session's principal was at the cap: %v", err)
	}
	if st := rawPing(t, s, bobToken, first); st != 404 {
		t.Errorf("a request of a session closed to make room: status %d, want 404", st)
	}
	fresh := s.mustConnectAt(bobToken, legacyVersion)
	if r, err := callExec(t, fresh, "bash", "echo new client"); err != nil || r.Stdout != "new client\n" {
		t.Fatalf("a new client after 200 initializes without DELETE: %+v %v", r, err)
	}

	// Every session busy: the SDK client keeps its SSE stream open.
	var open []*mcp.ClientSession
	for range max {
		open = append(open, s.mustConnectAt(aliceToken, legacyVersion))
	}
	status, e := rawInit(t, s, aliceToken)
	if status != 429 || e.ID != "1" || e.Code != -32000 ||
		!strings.Contains(e.Message, `principal "alice" has 8 open`) || !strings.Contains(e.Message, "CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL=8") {
		t.Fatalf("initialize with every session busy: status %d, error %+v", status, e)
	}
	if _, err := s.connectAt(aliceToken, legacyVersion); err == nil {
		t.Fatal("the SDK client opened a session with every session busy")
	}
	for i, cs := range open {
		if r, err := callExec(t, cs, "bash", "echo still here"); err != nil || r.Stdout != "still here\n" {
			t.Fatalf("open session %d after the refusal: %+v %v", i, r, err)
		}
	}

	// Closing one (DELETE) frees a slot.
	if err := open[0].Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		cs, err := s.connectAt(aliceToken, legacyVersion)
		if err == nil {
			_ = cs.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no slot 10s after closing a session: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
