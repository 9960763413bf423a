package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statelessVersion is the first protocol revision without sessions.
const statelessVersion = "2026-07-28"

// wireLog records what a client put on the wire over HTTP: the JSON-RPC
// methods it sent, the protocol versions its requests named, and every
// session id seen either way.
type wireLog struct {
	base http.RoundTripper

	mu         sync.Mutex
	methods    []string
	versions   map[string]int
	sessionIDs []string
}

func newWireLog(token string) *wireLog {
	var base http.RoundTripper = http.DefaultTransport
	if token != "" {
		base = bearer{token: token, base: base}
	}
	return &wireLog{base: base, versions: map[string]int{}}
}

func (w *wireLog) RoundTrip(r *http.Request) (*http.Response, error) {
	var m struct{ Method string }
	if r.Body != nil {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		_ = json.Unmarshal(body, &m)
	}
	w.mu.Lock()
	w.methods = append(w.methods, r.Method+" "+m.Method)
	w.versions[r.Header.Get("Mcp-Protocol-Version")]++
	if id := r.Header.Get("Mcp-Session-Id"); id != "" {
		w.sessionIDs = append(w.sessionIDs, "sent "+id)
	}
	w.mu.Unlock()
	resp, err := w.base.RoundTrip(r)
	if resp != nil && resp.Header.Get("Mcp-Session-Id") != "" {
		w.mu.Lock()
		w.sessionIDs = append(w.sessionIDs, "received "+resp.Header.Get("Mcp-Session-Id"))
		w.mu.Unlock()
	}
	return resp, err
}

// connectLogged connects a go-sdk client at version ("" = its newest) with
// token, recording its traffic; progress notifications go to pl.
func (s *httpServer) connectLogged(t *testing.T, token, version string, pl *progressLog) (*mcp.ClientSession, *wireLog) {
	t.Helper()
	wl := newWireLog(token)
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-stateless", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: pl.handle})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: &http.Client{Transport: wl}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, wl
}

// TestHTTPStatelessProtocol: a go-sdk client at the stateless revision
// talks to /mcp without a session: no initialize, no Mcp-Session-Id either
// way, every request naming its version. Runs stream progress; a session
// started in one request is used by the next; a principal's session is its
// own; cancelling a call (the client closes the request and sends
// notifications/cancelled) kills its run; no MCP session stays open.
func TestHTTPStatelessProtocol(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	pl := newProgressLog()
	cs, wl := s.connectLogged(t, aliceToken, "", pl)
	if got := cs.InitializeResult().ProtocolVersion; got != statelessVersion {
		t.Fatalf("negotiated %q, want %q", got, statelessVersion)
	}

	callStreamed(t, context.Background(), cs, pl, "execute_code", map[string]any{"language": "python", "code": pyTicksCode}, "stateless-ticks")
	sid := tenantOK(t, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tenantOK(t, cs, "send_to_session", map[string]any{"session_id": sid, "code": "x = 41"})
	if got := tenantOK(t, cs, "send_to_session", map[string]any{"session_id": sid, "code": "print(x + 1)"})["stdout"]; got != "42\n" {
		t.Errorf("the session's second request: stdout %q, want 42", got)
	}
	bob, _ := s.connectLogged(t, bobToken, "", newProgressLog())
	if res := tenantCall(t, bob, "send_to_session", map[string]any{"session_id": sid, "code": "print(x)"}); !res.IsError ||
		!strings.Contains(text(res), "SESSION_NOT_FOUND") {
		t.Errorf("bob reached alice's session statelessly: %s", text(res))
	}
	cancelSpinning(t, cs, pl, "statelesscancelmark")

	wl.mu.Lock()
	defer wl.mu.Unlock()
	if len(wl.sessionIDs) > 0 {
		t.Errorf("session ids on the wire: %v", wl.sessionIDs)
	}
	for _, m := range wl.methods {
		if m == "POST initialize" || strings.HasPrefix(m, "GET") || strings.HasPrefix(m, "DELETE") {
			t.Errorf("a stateless client sent %q", m)
		}
	}
	if diff := cmp.Diff(map[string]int{statelessVersion: len(wl.methods)}, wl.versions); diff != "" {
		t.Errorf("protocol version headers (-want +got):\n%s", diff)
	}
	if got := s.metric("codexec_mcp_sessions"); got != 0 {
		t.Errorf("codexec_mcp_sessions = %v after stateless requests, want 0", got)
	}
}

// cancelSpinning starts a spinning bash run through cs with a progress
// token, cancels the call once it streams, and waits for the run's log
// entry to say cancelled (the run was killed).
func cancelSpinning(t *testing.T, cs *mcp.ClientSession, pl *progressLog, mark string) {
	t.Helper()
	callCtx, stop := context.WithCancel(context.Background())
	defer stop()
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": "bash",
			"code": "echo spinning; while :; do :; done # " + mark, "timeout_ms": 120000}}
		p.SetProgressToken(mark)
		_, err := cs.CallTool(callCtx, p)
		errc <- err
	}()
	pl.awaitFirst(t, mark)
	stop()
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned a result")
	}
	awaitCancelledLog(t, cs, mark)
}

// awaitCancelledLog waits up to 10 s for the one execution whose code has
// mark to be logged cancelled.
func awaitCancelledLog(t *testing.T, cs *mcp.ClientSession, mark string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := tenantOK(t, cs, "search_execution_logs", map[string]any{"status": "cancelled", "query": mark})["results"].([]any)
		if len(got) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cancelled log entry for %s: %v", mark, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// statelessPost POSTs one JSON-RPC message of the stateless protocol (its
// version in the header and in params._meta) with token.
func statelessPost(ctx context.Context, s *httpServer, token, method, name string, id any, params map[string]any) (*http.Response, error) {
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": statelessVersion, "io.modelcontextprotocol/clientCapabilities": map[string]any{}}
	msg := map[string]any{"jsonrpc": "2.0", "method": method, "params": params}
	if id != nil {
		msg["id"] = id
	}
	body, _ := json.Marshal(msg)
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/mcp", bytes.NewReader(body))
	for k, v := range mcpHeaders(map[string]string{"Authorization": "Bearer " + token, "Mcp-Protocol-Version": statelessVersion, "Mcp-Method": method}) {
		req.Header.Set(k, v)
	}
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	return http.DefaultClient.Do(req)
}

// TestHTTPStatelessCancelledNotification: without a session, a
// notifications/cancelled in a POST of its own cancels the request in
// flight of the same principal with that id (its response stream ends and
// the run is logged cancelled); another principal's notification naming
// the same id cancels nothing.
func TestHTTPStatelessCancelledNotification(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const mark = "notifiedcancelmark"
	ended := make(chan string, 1) // what the call's response carried, once it ends
	go func() {
		resp, err := statelessPost(ctx, s, aliceToken, "tools/call", "execute_code", 77, map[string]any{"name": "execute_code",
			"arguments": map[string]any{"language": "bash", "code": "echo spinning; while :; do :; done # " + mark, "timeout_ms": 120000}})
		if err != nil {
			ended <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		ended <- fmt.Sprintf("status %d, session id %q: %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), body)
	}()
	time.Sleep(time.Second) // the run is spinning

	for _, who := range []string{bobToken, aliceToken} {
		n, err := statelessPost(ctx, s, who, "notifications/cancelled", "", nil, map[string]any{"requestId": 77, "reason": "test"})
		if err != nil {
			t.Fatal(err)
		}
		_ = n.Body.Close()
		if n.StatusCode != http.StatusAccepted {
			t.Errorf("notifications/cancelled: status %d, want 202", n.StatusCode)
		}
		if who == bobToken {
			select {
			case out := <-ended:
				t.Fatalf("another principal's notification ended the request: %s", out)
			case <-time.After(time.Second):
			}
		}
	}
	select {
	case out := <-ended:
		if strings.Contains(out, "Mcp-Session-Id") || !strings.HasPrefix(out, "status 200, session id \"\"") {
			t.Errorf("the cancelled request's response: %s", out)
		}
		t.Logf("the cancelled request's response: %s", out)
	case <-time.After(15 * time.Second):
		t.Fatal("the request was still streaming 15 s after its notifications/cancelled")
	}
	alice := s.mustConnect(aliceToken)
	awaitCancelledLog(t, alice, mark)
}

// TestHTTPLegacySessions: a client at the newest revision with sessions
// still gets one on the same URL: initialize, an Mcp-Session-Id on every
// request, runs, a session used across requests, progress and cancel.
func TestHTTPLegacySessions(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	pl := newProgressLog()
	cs, wl := s.connectLogged(t, aliceToken, legacyVersion, pl)
	if got := cs.InitializeResult().ProtocolVersion; got != legacyVersion {
		t.Fatalf("negotiated %q, want %q", got, legacyVersion)
	}
	if cs.ID() == "" {
		t.Fatal("no MCP session id at the revision with sessions")
	}
	callStreamed(t, context.Background(), cs, pl, "execute_code", map[string]any{"language": "python", "code": pyTicksCode}, "legacy-ticks")
	sid := tenantOK(t, cs, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tenantOK(t, cs, "send_to_session", map[string]any{"session_id": sid, "code": "x = 41"})
	if got := tenantOK(t, cs, "send_to_session", map[string]any{"session_id": sid, "code": "print(x + 1)"})["stdout"]; got != "42\n" {
		t.Errorf("the session's second request: stdout %q, want 42", got)
	}
	cancelSpinning(t, cs, pl, "legacycancelmark")
	if got := s.metric("codexec_mcp_sessions"); got != 1 {
		t.Errorf("codexec_mcp_sessions = %v with one client session open, want 1", got)
	}
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if len(wl.methods) == 0 || wl.methods[0] != "POST initialize" {
		t.Errorf("first request %v, want POST initialize", wl.methods)
	}
	sent := 0
	for _, id := range wl.sessionIDs {
		if id == "sent "+cs.ID() {
			sent++
		}
	}
	if sent < len(wl.methods)-1 {
		t.Errorf("%d of %d requests after initialize carried the session id", sent, len(wl.methods)-1)
	}
}

// TestStdioStatelessProtocol: over stdio the go-sdk client negotiates the
// stateless revision, and runs work there.
func TestStdioStatelessProtocol(t *testing.T) {
	s := start(t)
	if got := s.Session.InitializeResult().ProtocolVersion; got != statelessVersion {
		t.Fatalf("negotiated %q over stdio, want %q", got, statelessVersion)
	}
	var r execResult
	s.callInto("execute_code", map[string]any{"language": "python", "code": "print(6 * 7)"}, &r)
	if r.Stdout != "42\n" {
		t.Errorf("stdout %q, want 42", r.Stdout)
	}
}
