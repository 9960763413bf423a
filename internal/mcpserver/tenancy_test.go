package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
	"github.com/codexec/codexec/internal/tenant"
)

// tenants is an in-process server whose clients each act as one principal:
// a receiving middleware stamps each client's calls with a verified token
// naming its principal, as the HTTP transport's auth does, so the server's
// own tenancy middleware and stores are what is tested.
type tenants struct {
	t          *testing.T
	srv        *mcpserver.Server
	mu         sync.Mutex
	principals map[*mcp.ServerSession]string
}

// newTenants is tenants over the whole app in subprocess mode: for the
// tests whose point is state kept by real interpreters (sessions). Without
// a python3 (where the server looks for one) they skip.
func newTenants(t *testing.T, tweak func(*config.Config)) *tenants {
	t.Helper()
	if py := runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH")).Get(runtime.Python); py.Err != nil {
		t.Skipf("needs a python3 (%v): this test keeps state in real interpreter sessions", py.Err)
	}
	dir := t.TempDir()
	cfg := config.Defaults(dir)
	cfg.SandboxMode = config.ModeSubprocess
	cfg.AllowedCommands = []string{"echo"}
	if tweak != nil {
		tweak(&cfg)
	}
	a, err := app.Build(context.Background(), cfg, app.HostEnv{Home: dir, Path: os.Getenv("PATH"), Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return stampTenants(t, a.Server)
}

// fakeTenants is tenants over a fakeServer (nothing runs).
func fakeTenants(t *testing.T, o fakeOptions) (*tenants, *fakeServer) {
	t.Helper()
	s := newFakeServer(t, o)
	return stampTenants(t, s.Server), s
}

// stampTenants makes srv's clients act as the principals client names.
func stampTenants(t *testing.T, srv *mcpserver.Server) *tenants {
	ts := &tenants{t: t, srv: srv, principals: map[*mcp.ServerSession]string{}}
	srv.MCP().AddReceivingMiddleware(ts.stamp)
	return ts
}

func (ts *tenants) stamp(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if r, ok := req.(*mcp.CallToolRequest); ok {
			ts.mu.Lock()
			p := ts.principals[r.Session]
			ts.mu.Unlock()
			if p != "" {
				r.Extra = &mcp.RequestExtra{TokenInfo: &auth.TokenInfo{UserID: p, Expiration: time.Now().Add(time.Hour)}}
			}
		}
		return next(ctx, method, req)
	}
}

// client connects a client acting as principal ("" = no token: stdio's Local).
func (ts *tenants) client(principal string) *caller {
	ts.t.Helper()
	return ts.clientWith(principal, nil)
}

func (ts *tenants) clientWith(principal string, opts *mcp.ClientOptions) *caller {
	ts.t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := ts.srv.MCP().Connect(ctx, st, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.mu.Lock()
	ts.principals[ss] = principal
	ts.mu.Unlock()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: principal, Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { _ = cs.Close(); _ = ss.Close() })
	return &caller{t: ts.t, cs: cs, name: principal}
}

type caller struct {
	t    *testing.T
	cs   *mcp.ClientSession
	name string
}

// call runs a tool and returns its result; a protocol error fails the test.
func (c *caller) call(tool string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %s: %v", c.name, tool, err)
	}
	return res
}

// ok runs a tool that must succeed and decodes its structured content.
func (c *caller) ok(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	res := c.call(tool, args)
	if res.IsError {
		c.t.Fatalf("%s %s: tool error %s", c.name, tool, tooltest.Text(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// refused runs a tool that must fail and returns its error text.
func (c *caller) refused(tool string, args map[string]any) string {
	c.t.Helper()
	res := c.call(tool, args)
	if !res.IsError {
		c.t.Errorf("%s %s %v: not refused: %s", c.name, tool, args, tooltest.Text(res))
	}
	return tooltest.Text(res)
}

// sameAsUnknown checks that c's call of tool naming another principal's id
// (argument key, with extra arguments) is refused word for word as the
// same call naming ghost, an id that never existed: ids are no oracle.
func (c *caller) sameAsUnknown(tool, key, id, ghost string, extra map[string]any) {
	c.t.Helper()
	args := map[string]any{key: id}
	ghostArgs := map[string]any{key: ghost}
	for k, v := range extra {
		args[k], ghostArgs[k] = v, v
	}
	got := c.refused(tool, args)
	want := strings.ReplaceAll(c.refused(tool, ghostArgs), ghost, id)
	if got != want {
		c.t.Errorf("%s on another's %s differs from an unknown id:\n got %s\nwant %s", tool, id, got, want)
	}
}

// TestPrincipalsAreIsolated: what alice creates, bob (another token) and the
// local stdio principal can neither use, list, stop nor search — and the
// refusal is word for word the one for an id that never existed, so ids are
// no oracle.
func TestPrincipalsAreIsolated(t *testing.T) {
	ts := newTenants(t, func(c *config.Config) { c.MaxSessions = 10 })
	alice, bob, local := ts.client("alice"), ts.client("bob"), ts.client("")
	local.name = "local"

	sid := alice.ok("start_session", map[string]any{"language": "python"})["session_id"].(string)
	alice.ok("send_to_session", map[string]any{"session_id": sid, "code": "secret = 41"})
	cid := alice.ok("create_context", map[string]any{"name": "shared-name"})["context_id"].(string)
	alice.ok("save_script", map[string]any{"name": "alice-tool", "language": "bash", "code": "echo alicescript"})
	execID := alice.ok("execute_code", map[string]any{"language": "bash", "code": "echo alicesecret"})["execution_id"].(string)
	alice.ok("execute_command", map[string]any{"command": "echo alicecommand"})

	for _, other := range []*caller{bob, local} {
		t.Run(other.name+"-refused", func(t *testing.T) {
			other.t = t
			sameAsUnknown := func(tool, key, id, ghost string, extra map[string]any) {
				t.Helper()
				other.sameAsUnknown(tool, key, id, ghost, extra)
			}
			ghostSess := "sess_" + strings.Repeat("0", len(sid)-len("sess_"))
			sameAsUnknown("send_to_session", "session_id", sid, ghostSess, map[string]any{"code": "print(secret)"})
			sameAsUnknown("execute_code", "session_id", sid, ghostSess, map[string]any{"code": "print(secret)"})
			sameAsUnknown("close_session", "session_id", sid, ghostSess, nil)
			sameAsUnknown("run_code", "context_id", cid, "ctx-00000000-0000", map[string]any{"code": "1"})
			sameAsUnknown("run_code", "context_id", "shared-name", "no-such-name", map[string]any{"code": "1"})
			sameAsUnknown("stop_context", "context_id", cid, "ctx-00000000-0000", nil)
			sameAsUnknown("get_script", "name", "alice-tool", "ghost-tool", nil)
			sameAsUnknown("run_script", "name", "alice-tool", "ghost-tool", nil)
			sameAsUnknown("list_files", "session_id", sid, ghostSess, nil)
			sameAsUnknown("download_file", "session_id", sid, ghostSess, map[string]any{"path": "x.txt"})
			sameAsUnknown("list_files", "execution_id", execID, "exec_"+strings.Repeat("0", len(execID)-len("exec_")), nil)
			sameAsUnknown("install_package", "session_id", sid, ghostSess, map[string]any{"package": "six", "language": "python"})
			sameAsUnknown("get_execution_log", "execution_id", execID, "exec_"+strings.Repeat("0", len(execID)-len("exec_")), nil)

			if got := other.ok("list_sessions", nil)["sessions"]; len(got.([]any)) != 0 {
				t.Errorf("list_sessions shows another's sessions: %v", got)
			}
			if got := other.ok("list_contexts", nil)["contexts"]; len(got.([]any)) != 0 {
				t.Errorf("list_contexts shows another's contexts: %v", got)
			}
			if got := other.ok("list_scripts", nil)["scripts"]; len(got.([]any)) != 0 {
				t.Errorf("list_scripts shows another's scripts: %v", got)
			}
			if got := other.ok("search_scripts", map[string]any{"query": "alice"})["results"]; len(got.([]any)) != 0 {
				t.Errorf("search_scripts finds another's scripts: %v", got)
			}
			for _, q := range []map[string]any{{"query": "alicesecret"}, {"query": "alicecommand"}, {}, {"status": "success"}, {"language": "python"}} {
				if got := other.ok("search_execution_logs", q)["results"]; len(got.([]any)) != 0 {
					t.Errorf("search_execution_logs %v finds another's executions: %v", q, got)
				}
			}
			// The same context name is free in another principal's namespace.
			other.ok("create_context", map[string]any{"name": "shared-name"})
		})
	}

	// A caller-chosen session id (execute_code's session_id) exists once per principal: bob's
	// "proj" is his own new session, not alice's.
	alice.ok("execute_code", map[string]any{"session_id": "proj", "language": "python", "code": "v = 'alice'"})
	out := bob.ok("execute_code", map[string]any{"session_id": "proj", "language": "python", "code": "print(globals().get('v'))"})
	if out["stdout"] != "None\n" {
		t.Errorf("bob's proj sees alice's state: %v", out)
	}
	if got := alice.ok("execute_code", map[string]any{"session_id": "proj", "code": "print(v)"})["stdout"]; got != "alice\n" {
		t.Errorf("alice's proj: %v", got)
	}

	// Global installs would change every principal's runs: local only.
	if msg := bob.refused("install_package", map[string]any{"package": "six", "language": "python"}); !strings.Contains(msg, "session_id") {
		t.Errorf("bob's global install: %s", msg)
	}

	// Alice still sees exactly her own things, state intact.
	out = alice.ok("send_to_session", map[string]any{"session_id": sid, "code": "print(secret + 1)"})
	if strings.TrimSpace(out["stdout"].(string)) != "42" {
		t.Errorf("alice's session lost its state: %v", out)
	}
	if n := len(alice.ok("list_contexts", nil)["contexts"].([]any)); n != 3 {
		t.Errorf("alice lists %d sessions+contexts, want 3 (her own only)", n)
	}
	if hits := alice.ok("search_execution_logs", map[string]any{"query": "alicesecret"})["results"].([]any); len(hits) != 1 {
		t.Errorf("alice finds %d of her executions, want 1", len(hits))
	}
	alice.ok("get_execution_log", map[string]any{"execution_id": execID})
	if got := alice.ok("run_script", map[string]any{"name": "alice-tool"})["stdout"]; got != "alicescript\n" {
		t.Errorf("alice's script printed %q", got)
	}
	alice.ok("close_session", map[string]any{"session_id": sid})
}

// TestLocalKeepsLegacyLayout: the local principal's scripts stay at the
// library root (libraries from before tenants still work) while another
// principal's live below .tenants/.
func TestLocalKeepsLegacyLayout(t *testing.T) {
	ts, s := fakeTenants(t, fakeOptions{})
	root := s.cfg.ScriptsDir
	ts.client("").ok("save_script", map[string]any{"name": "mine", "language": "bash", "code": "echo"})
	ts.client("carol").ok("save_script", map[string]any{"name": "theirs", "language": "bash", "code": "echo"})
	if _, err := os.Stat(root + "/mine/script.sh"); err != nil {
		t.Errorf("local script not at the legacy path: %v", err)
	}
	if _, err := os.Stat(root + "/.tenants/" + tenant.Tag("carol") + "/theirs/script.sh"); err != nil {
		t.Errorf("carol's script not in her namespace: %v", err)
	}
	if _, err := os.Stat(root + "/theirs"); err == nil {
		t.Errorf("carol's script leaked into the local library")
	}
}

// TestSessionQuotaPerPrincipal: one principal at its session quota cannot
// start more, while another still can.
func TestSessionQuotaPerPrincipal(t *testing.T) {
	ts := newTenants(t, func(c *config.Config) { c.MaxSessions, c.MaxSessionsPerPrincipal = 4, 1 })
	alice, bob := ts.client("alice"), ts.client("bob")
	alice.ok("start_session", map[string]any{"language": "python"})
	if msg := alice.refused("start_session", map[string]any{"language": "python"}); !strings.Contains(msg, "CODEXEC_MAX_SESSIONS_PER_PRINCIPAL=1") {
		t.Errorf("second session of alice: %s", msg)
	}
	bob.ok("start_session", map[string]any{"language": "python"})
}

// TestExecutionQuotaBusy: with CODEXEC_MAX_CONCURRENT=1 a principal's second
// concurrent execution waits CODEXEC_QUEUE_WAIT_MS and then gets a busy
// error, while another principal runs at once.
func TestExecutionQuotaBusy(t *testing.T) {
	// The queue wait must outlast a cancelled run's teardown: the last call
	// below queues behind it.
	const wait = 500 * time.Millisecond
	ts, _ := fakeTenants(t, fakeOptions{script: echoes, tweak: func(c *config.Config) { c.MaxConcurrent, c.QueueWait = 1, wait }})
	up := make(chan struct{}, 1)
	alice := ts.clientWith("alice", &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
		select {
		case up <- struct{}{}:
		default:
		}
	}})
	bob := ts.client("bob")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Held until cancelled: it occupies alice's only slot. Its first
		// output (a progress notification) says it holds the slot.
		params := &mcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"language": "bash", "code": "echo up; sleep 60"}}
		params.SetProgressToken("hold")
		_, _ = alice.cs.CallTool(ctx, params)
	}()
	select {
	case <-up:
	case <-time.After(time.Minute):
		t.Fatal("the long run never started")
	}
	start := time.Now()
	msg := alice.refused("execute_code", map[string]any{"language": "bash", "code": "echo second"})
	if !strings.Contains(msg, "busy") || !strings.Contains(msg, "CODEXEC_MAX_CONCURRENT=1") || !strings.Contains(msg, "CODEXEC_QUEUE_WAIT_MS") ||
		!strings.Contains(msg, `"code":"BUSY"`) {
		t.Errorf("busy error = %q", msg)
	}
	if waited := time.Since(start); waited < wait {
		t.Errorf("busy after %v, before the queue wait of %v", waited, wait)
	}
	if got := bob.ok("execute_code", map[string]any{"language": "bash", "code": "echo bob"})["stdout"]; got != "bob\n" {
		t.Errorf("bob's run printed %q", got)
	}
	cancel()
	<-done
	// The slot frees once the cancelled run is gone; the next call queues
	// for it rather than failing.
	if got := alice.ok("execute_code", map[string]any{"language": "bash", "code": "echo again"})["stdout"]; got != "again\n" {
		t.Errorf("alice's run after the cancel printed %q", got)
	}
}

// echoes is a script that answers a bash program as its echo lines would
// (each prints its words), and runs until cancelled when the program
// sleeps: enough of bash for the quota tests, with nothing executed.
func echoes(spec sandbox.Spec) sandboxfake.Outcome {
	var o sandboxfake.Outcome
	for _, cmd := range strings.FieldsFunc(tooltest.Program(spec), func(r rune) bool { return r == '\n' || r == ';' }) {
		cmd = strings.TrimSpace(cmd)
		if words, ok := strings.CutPrefix(cmd, "echo "); ok {
			o.Stdout += words + "\n"
		}
		if strings.HasPrefix(cmd, "sleep ") {
			o.Duration = time.Hour
		}
	}
	return o
}
