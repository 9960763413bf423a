package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/authn/authntest"
)

const (
	aliceToken = "alice-e2e-token-0123456789"
	bobToken   = "bob-e2e-token-0123456789ab"
)

// tokenFile writes a token file: alice in plaintext, bob by sha256.
func tokenFile(t *testing.T) string {
	t.Helper()
	sum := sha256.Sum256([]byte(bobToken))
	path := filepath.Join(t.TempDir(), "tokens")
	body := "# e2e\n" + aliceToken + " alice\nsha256:" + hex.EncodeToString(sum[:]) + " bob\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// callExec runs execute_code over cs and decodes the result.
func callExec(t testing.TB, cs *mcp.ClientSession, lang, code string) (execResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": lang, "code": code}})
	if err != nil {
		return execResult{}, err
	}
	var r execResult
	decodeStructured(t, res, &r)
	return r, nil
}

// logLines returns every line of the execution logs.
func logLines(t *testing.T, dataDir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dataDir, "logs", "*.jsonl"))
	var lines []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines = append(lines, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	return lines
}

func TestHTTPBearerTokens(t *testing.T) {
	sameInEveryMode(t, "authentication, before any run")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	marker := filepath.Join(t.TempDir(), "ran")
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"language":"bash","code":"touch %s"}}}`, marker)
	refused := []struct{ name, auth string }{
		{"missing", ""},
		{"wrong", "Bearer not-a-valid-token-at-all"},
		{"not bearer", "Basic " + aliceToken},
		{"hash instead of token", "Bearer sha256:" + hex.EncodeToString([]byte(bobToken))},
	}
	for _, r := range refused {
		t.Run(r.name, func(t *testing.T) {
			for _, body := range []string{initBody, call} {
				hdr := mcpHeaders(nil)
				if r.auth != "" {
					hdr["Authorization"] = r.auth
				}
				code, _, h := do(t, "POST", s.URL+"/mcp", body, hdr)
				if code != 401 || h.Get("WWW-Authenticate") != `Bearer realm="codexec"` {
					t.Errorf("status %d, WWW-Authenticate %q; want 401 with a Bearer challenge", code, h.Get("WWW-Authenticate"))
				}
			}
			if _, err := s.connect(strings.TrimPrefix(r.auth, "Bearer ")); err == nil {
				t.Error("go-sdk client connected without a valid token")
			}
		})
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("refused request ran code (marker %v)", err)
	}
	if lines := logLines(t, s.DataDir); len(lines) > 0 && lines[0] != "" {
		t.Fatalf("refused requests left execution log entries: %v", lines)
	}
	for token, who := range map[string]string{aliceToken: "alice", bobToken: "bob"} {
		cs := s.mustConnect(token)
		r, err := callExec(t, cs, "bash", "echo hi "+who)
		if err != nil || r.Status != "success" || r.Stdout != "hi "+who+"\n" {
			t.Fatalf("%s: %+v %v", who, r, err)
		}
		if !strings.Contains(s.Stderr.String(), "principal="+who) {
			t.Errorf("access log does not name principal %s", who)
		}
	}
	if got := s.metric(`codexec_auth_failures_total{reason="invalid"}`); got < 3 {
		t.Errorf("auth_failures_total{invalid} = %v, want ≥ 3", got)
	}
}

// TestHTTPSessionBoundToPrincipal: a session id minted for alice is
// useless with bob's token (the SDK compares TokenInfo.UserID).
func TestHTTPSessionBoundToPrincipal(t *testing.T) {
	sameInEveryMode(t, "authentication, before any run")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	code, _, h := do(t, "POST", s.URL+"/mcp", initBody, mcpHeaders(map[string]string{"Authorization": "Bearer " + aliceToken}))
	sid := h.Get("Mcp-Session-Id")
	if code != 200 || sid == "" {
		t.Fatalf("initialize: %d session %q", code, sid)
	}
	list := `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`
	code, body, _ := do(t, "POST", s.URL+"/mcp", list, mcpHeaders(map[string]string{"Authorization": "Bearer " + bobToken, "Mcp-Session-Id": sid}))
	if code < 400 || strings.Contains(body, "execute_code") {
		t.Errorf("bob used alice's session: %d %s", code, body)
	}
}

func TestHTTPJWT(t *testing.T) {
	sameInEveryMode(t, "authentication, before any run")
	iss := authntest.New(t)
	addr := freeAddr(t)
	resource := "http://" + addr + "/mcp"
	s := startHTTP(t, addr, "CODEXEC_OAUTH_ISSUER="+iss.URL, "CODEXEC_OAUTH_JWKS_URL="+iss.JWKSURL)
	metaURL := "http://" + addr + "/.well-known/oauth-protected-resource/mcp"
	wantChallenge := fmt.Sprintf(`Bearer resource_metadata=%q`, metaURL)
	refused := map[string]string{
		"missing":        "",
		"expired":        iss.Token(t, "alice", resource, -2*time.Minute, nil),
		"other audience": iss.Token(t, "alice", "http://127.0.0.1:1/mcp", time.Hour, nil),
		"unknown key":    iss.ForeignToken(t, "alice", resource),
	}
	for name, tok := range refused {
		hdr := mcpHeaders(nil)
		if tok != "" {
			hdr["Authorization"] = "Bearer " + tok
		}
		code, _, h := do(t, "POST", s.URL+"/mcp", initBody, hdr)
		if code != 401 || h.Get("WWW-Authenticate") != wantChallenge {
			t.Errorf("%s: %d %q, want 401 %q", name, code, h.Get("WWW-Authenticate"), wantChallenge)
		}
	}
	code, body, _ := s.get("/.well-known/oauth-protected-resource/mcp")
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal([]byte(body), &prm); code != 200 || err != nil || prm.Resource != resource || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != iss.URL {
		t.Errorf("metadata document %d %s", code, body)
	}
	cs := s.mustConnect(iss.Token(t, "carol", resource, time.Hour, nil))
	if r, err := callExec(t, cs, "python", "print(6*7)"); err != nil || r.Stdout != "42\n" {
		t.Fatalf("valid JWT: %+v %v", r, err)
	}
	if !strings.Contains(s.Stderr.String(), "principal=carol") {
		t.Error("access log does not name the token's subject")
	}
	if got := s.metric(`codexec_auth_failures_total{reason="expired"}`); got != 1 {
		t.Errorf("auth_failures_total{expired} = %v, want 1", got)
	}
}

func TestHTTPProbesMetricsAndGuards(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_HTTP_MAX_BODY=64k")
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		if code, body, _ := s.get(path); code != 200 || body != want {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	cs := s.mustConnectAt("", legacyVersion) // a stateful session, which the mcp_sessions gauge counts
	r, err := callExec(t, cs, "python", "print('metered')")
	if err != nil || r.Status != "success" {
		t.Fatalf("%+v %v", r, err)
	}
	// Results do not repeat the server's sandbox mode; the run's log entry has it.
	var entry struct {
		SandboxMode string `json:"sandbox_mode"`
	}
	logRes, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_execution_log", Arguments: map[string]any{"execution_id": r.ExecutionID}})
	if err != nil || logRes.IsError {
		t.Fatalf("get_execution_log: %v %+v", err, logRes)
	}
	decodeStructured(t, logRes, &entry)
	series := fmt.Sprintf(`codexec_executions_total{language="python",sandbox_mode=%q,status="success"}`, entry.SandboxMode)
	checks := map[string]float64{series: 1, "codexec_mcp_sessions": 1, "codexec_running_calls": 0}
	for k, want := range checks {
		if got := s.metric(k); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if s.metric(`codexec_http_requests_total{code="200",method="POST",route="/mcp"}`) < 2 || s.metric("go_goroutines") <= 0 {
		t.Error("http request counter or runtime metrics missing")
	}
	if entry.SandboxMode == "namespace" { // warm runners: the run counts as served warm or cold
		runs := s.metric(`codexec_warm_pool_runs_total{kind="python",served="warm"}`) + s.metric(`codexec_warm_pool_runs_total{kind="python",served="cold"}`)
		if runs != 1 {
			t.Errorf("warm pool counted %v python runs, want 1", runs)
		}
	}
	guards := []struct {
		name string
		hdr  map[string]string
		body string
		want int
	}{
		{"rebinding Host", map[string]string{"Host": "evil.example:80"}, initBody, 403},
		{"foreign Origin", map[string]string{"Origin": "http://evil.example"}, initBody, 403},
		{"oversized body", nil, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"` + strings.Repeat("a", 100<<10) + `"}}}`, 413},
		{"own Origin", map[string]string{"Origin": s.URL}, initBody, 200},
	}
	for _, g := range guards {
		if code, body, _ := do(t, "POST", s.URL+"/mcp", g.body, mcpHeaders(g.hdr)); code != g.want {
			t.Errorf("%s: status %d, want %d (%s)", g.name, code, g.want, tail(body, 200))
		}
	}
}
