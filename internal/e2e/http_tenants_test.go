package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tenantCall runs a tool over cs and returns the result; protocol errors
// fail the test.
func tenantCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func tenantOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) map[string]any {
	t.Helper()
	res := tenantCall(t, cs, tool, args)
	if res.IsError {
		t.Fatalf("%s: %s", tool, text(res))
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	return out
}

// TestHTTPTwoTokensIsolated: over Streamable HTTP with a token file, bob's
// token can neither use, list, stop nor search what alice's token created;
// each refusal reads exactly like the one for an id that never existed.
func TestHTTPTwoTokensIsolated(t *testing.T) {
	sameInEveryMode(t, "ownership checks, before any run")
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "ALLOWED_COMMANDS=echo")
	alice, bob := s.mustConnect(aliceToken), s.mustConnect(bobToken)

	sid := tenantOK(t, alice, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tenantOK(t, alice, "send_to_session", map[string]any{"session_id": sid, "code": "secret = 41"})
	cid := tenantOK(t, alice, "create_context", map[string]any{"name": "alice-ctx"})["context_id"].(string)
	tenantOK(t, alice, "save_script", map[string]any{"name": "alice-tool", "language": "bash", "code": "echo hi"})
	execID := tenantOK(t, alice, "execute_code", map[string]any{"language": "bash", "code": "echo httpsecret"})["execution_id"].(string)

	ghost := func(id, prefix string) string { return prefix + strings.Repeat("0", len(id)-len(prefix)) }
	for _, c := range []struct {
		tool, key, id, ghost string
		extra                map[string]any
	}{
		{"send_to_session", "session_id", sid, ghost(sid, "sess_"), map[string]any{"code": "print(secret)"}},
		{"execute_code", "session_id", sid, ghost(sid, "sess_"), map[string]any{"code": "print(secret)"}},
		{"close_session", "session_id", sid, ghost(sid, "sess_"), nil},
		{"run_code", "context_id", cid, ghost(cid, "ctx-"), map[string]any{"code": "1"}},
		{"stop_context", "context_id", "alice-ctx", "ghost-ctx", nil},
		{"get_script", "name", "alice-tool", "ghost-tool", nil},
		{"run_script", "name", "alice-tool", "ghost-tool", nil},
		{"get_execution_log", "execution_id", execID, ghost(execID, "exec_"), nil},
	} {
		args, ghostArgs := map[string]any{c.key: c.id}, map[string]any{c.key: c.ghost}
		for k, v := range c.extra {
			args[k], ghostArgs[k] = v, v
		}
		got, want := tenantCall(t, bob, c.tool, args), tenantCall(t, bob, c.tool, ghostArgs)
		if !got.IsError || text(got) != strings.ReplaceAll(text(want), c.ghost, c.id) {
			t.Errorf("bob %s on alice's %s: %s (unknown id: %s)", c.tool, c.id, text(got), text(want))
		}
	}
	for tool, field := range map[string]string{"list_sessions": "sessions", "list_contexts": "contexts", "list_scripts": "scripts"} {
		if got := tenantOK(t, bob, tool, nil)[field].([]any); len(got) != 0 {
			t.Errorf("bob's %s shows alice's: %v", tool, got)
		}
	}
	if got := tenantOK(t, bob, "search_execution_logs", map[string]any{"query": "httpsecret"})["results"].([]any); len(got) != 0 {
		t.Errorf("bob finds alice's executions: %v", got)
	}
	if out := tenantOK(t, alice, "send_to_session", map[string]any{"session_id": sid, "code": "print(secret + 1)"}); out["stdout"] != "42\n" {
		t.Errorf("alice's session after bob's attempts: %v", out)
	}
	if got := tenantOK(t, alice, "search_execution_logs", map[string]any{"query": "httpsecret"})["results"].([]any); len(got) != 1 {
		t.Errorf("alice finds %d of her executions, want 1", len(got))
	}
}

// TestHTTPProgressAndCancel: over HTTP too, output streams as progress
// notifications and a cancelled call's run is killed and logged cancelled.
func TestHTTPProgressAndCancel(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	pl := newProgressLog()
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-http", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: pl.handle})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: httpClient(aliceToken), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	callStreamed(t, context.Background(), cs, pl, "execute_code", map[string]any{"language": "python", "code": pyTicksCode}, "http-ticks")

	callCtx, stop := context.WithCancel(context.Background())
	defer stop()
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": "bash",
			"code": "echo spinning; while :; do :; done # httpcancelmark", "timeout_ms": 120000}}
		p.SetProgressToken("http-spin")
		_, err := cs.CallTool(callCtx, p)
		errc <- err
	}()
	pl.awaitFirst(t, "http-spin")
	stop()
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned a result")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := tenantOK(t, cs, "search_execution_logs", map[string]any{"status": "cancelled", "query": "httpcancelmark"})["results"].([]any)
		if len(got) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no cancelled log entry over HTTP: %v", got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
