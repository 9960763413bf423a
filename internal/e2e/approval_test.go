package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// approvalRun is a call whose code leaves a trace on the host: a line in
// ran.txt of its working directory, so a test sees whether it ran.
type approvalRun struct {
	dir  string
	args map[string]any
}

func newApprovalRun(t *testing.T, root string) approvalRun {
	t.Helper()
	dir, err := os.MkdirTemp(root, "w")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	code := "with open('ran.txt', 'a') as f:\n    f.write('ran\\n')\nprint('wrote')\n"
	return approvalRun{dir: dir, args: map[string]any{"language": "python", "code": code, "working_dir": dir}}
}

// runs is how many times the call's code ran.
func (r approvalRun) runs(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "ran.txt"))
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "ran\n")
}

// asker is a client's elicitation handler that answers every question
// with answer after delay, and keeps the questions it was asked.
type asker struct {
	answer *mcp.ElicitResult
	delay  time.Duration

	mu        sync.Mutex
	questions []string
}

func (a *asker) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	a.mu.Lock()
	a.questions = append(a.questions, req.Params.Message)
	answer := a.answer
	a.mu.Unlock()
	select {
	case <-time.After(a.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return answer, nil
}

// answerWith makes later questions get answer.
func (a *asker) answerWith(answer *mcp.ElicitResult) {
	a.mu.Lock()
	a.answer = answer
	a.mu.Unlock()
}

func (a *asker) asked() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.questions...)
}

var (
	approve = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	decline = &mcp.ElicitResult{Action: "decline"}
)

// startApproval starts a server that asks about every run (plus env),
// whose client speaks protocol (""= the newest) with opts.
func startApproval(t *testing.T, root, protocol string, opts *mcp.ClientOptions, env ...string) *server {
	t.Helper()
	env = append([]string{"CODEXEC_APPROVAL=always", "CODEXEC_WRITABLE_ROOTS=" + root}, env...)
	var sopts *mcp.ClientSessionOptions
	if protocol != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	s := launchSession(t, rootlessMode(), "", opts, sopts, env...)
	want := protocol
	if want == "" {
		want = "2026-07-28"
	}
	if ir := s.Session.InitializeResult(); ir != nil && ir.ProtocolVersion != want {
		t.Fatalf("negotiated protocol %s, want %s", ir.ProtocolVersion, want)
	}
	return s
}

// approvalRoot is a directory for the calls' working directories that
// sandboxed code may write.
func approvalRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// approvalLog is the decisions in the server's execution log, in order.
func approvalLog(t *testing.T, s *server) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(s.DataDir, "logs", "executions-*.jsonl"))
	var out []map[string]any
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil && m["type"] == "approval" {
				out = append(out, m)
			}
		}
	}
	return out
}

// decisions is each logged decision's tool and outcome.
func decisions(t *testing.T, s *server) []string {
	var out []string
	for _, m := range approvalLog(t, s) {
		out = append(out, m["tool"].(string)+" "+m["decision"].(string))
	}
	return out
}

// wantRefused checks that res refuses the call with NOT_ALLOWED and a
// message saying want.
func wantRefused(t *testing.T, res *mcp.CallToolResult, want string) {
	t.Helper()
	code, msg := toolError(t, res)
	if code != "NOT_ALLOWED" || !strings.Contains(msg, want) {
		t.Errorf("refusal %s %q, want NOT_ALLOWED saying %q", code, msg, want)
	}
	if !strings.Contains(msg, "nothing ran") {
		t.Errorf("refusal %q does not say that nothing ran", msg)
	}
}

// TestApprovalAnswered: a person approving lets the call run once; a
// person declining refuses it and nothing runs; either way the question
// showed what would run and the decision is in the execution log. Over
// the multi round-trip revision (the go-sdk client's own retry) and over
// 2025-11-25 (the server asks during the call).
func TestApprovalAnswered(t *testing.T) {
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run(protocolName(protocol), func(t *testing.T) {
			for _, tc := range []struct {
				name     string
				answer   *mcp.ElicitResult
				runs     int
				decision string
			}{
				{"approved", approve, 1, "approved"},
				{"declined", decline, 0, "declined"},
				{"unticked", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": false}}, 0, "declined"},
				{"dismissed", &mcp.ElicitResult{Action: "cancel"}, 0, "cancelled"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					root := approvalRoot(t)
					a := &asker{answer: tc.answer}
					s := startApproval(t, root, protocol, &mcp.ClientOptions{ElicitationHandler: a.handle})
					run := newApprovalRun(t, root)
					res := s.call("execute_code", run.args)
					if tc.runs == 1 {
						if r := decodeExec(t, res); r.Status != "success" || r.Stdout != "wrote\n" {
							t.Errorf("approved run: %+v", r)
						}
					} else {
						wantRefused(t, res, map[string]string{"declined": "declined", "cancelled": "dismissed"}[tc.decision])
					}
					if got := run.runs(t); got != tc.runs {
						t.Errorf("the code ran %d times, want %d", got, tc.runs)
					}
					q := a.asked()
					if len(q) != 1 {
						t.Fatalf("asked %d questions, want 1: %q", len(q), q)
					}
					for _, want := range []string{"execute_code", "Language: python", "Working directory: " + run.dir, "Network: none", "open('ran.txt', 'a')"} {
						if !strings.Contains(q[0], want) {
							t.Errorf("question lacks %q:\n%s", want, q[0])
						}
					}
					if diff := cmp.Diff([]string{"execute_code " + tc.decision}, decisions(t, s)); diff != "" {
						t.Errorf("logged decisions (-want +got):\n%s", diff)
					}
				})
			}
		})
	}
}

// TestApprovalUnanswered: a question not answered within
// CODEXEC_APPROVAL_TIMEOUT refuses the call, and a late answer runs
// nothing.
func TestApprovalUnanswered(t *testing.T) {
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run(protocolName(protocol), func(t *testing.T) {
			root := approvalRoot(t)
			a := &asker{answer: approve, delay: 2500 * time.Millisecond}
			s := startApproval(t, root, protocol, &mcp.ClientOptions{ElicitationHandler: a.handle}, "CODEXEC_APPROVAL_TIMEOUT=1s")
			run := newApprovalRun(t, root)
			res := s.call("execute_code", run.args)
			wantRefused(t, res, "within 1s")
			time.Sleep(2 * time.Second) // past the late answer
			if got := run.runs(t); got != 0 {
				t.Errorf("the code ran %d times after the question timed out", got)
			}
			if diff := cmp.Diff([]string{"execute_code timed_out"}, decisions(t, s)); diff != "" {
				t.Errorf("logged decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApprovalNoElicitation: a client that declared no elicitation is
// refused with a message saying why and what to do; nothing runs.
func TestApprovalNoElicitation(t *testing.T) {
	for _, protocol := range []string{"", "2025-11-25"} {
		t.Run(protocolName(protocol), func(t *testing.T) {
			root := approvalRoot(t)
			s := startApproval(t, root, protocol, nil)
			run := newApprovalRun(t, root)
			wantRefused(t, s.call("execute_code", run.args), "does not support form elicitation")
			if got := run.runs(t); got != 0 {
				t.Errorf("the code ran %d times", got)
			}
			if diff := cmp.Diff([]string{"execute_code refused"}, decisions(t, s)); diff != "" {
				t.Errorf("logged decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestApprovalTamperedState: a client retrying by hand (its multi
// round-trip middleware off) cannot change the request state or the
// arguments between the question and the answer, nor use an approval
// twice; the untouched retry runs the call exactly once.
func TestApprovalTamperedState(t *testing.T) {
	root := approvalRoot(t)
	s := startApproval(t, root, "", &mcp.ClientOptions{
		ElicitationHandler: (&asker{answer: approve}).handle, // declares the capability; never called here
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
	})
	run := newApprovalRun(t, root)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	first, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: run.args})
	if err != nil {
		t.Fatal(err)
	}
	q, ok := first.InputRequests["approval"].(*mcp.ElicitParams)
	if !first.NeedsInput() || !ok || first.RequestState == "" || len(first.Content) != 0 {
		t.Fatalf("first round: want one elicitation and a request state, got %+v", first)
	}
	if !strings.Contains(q.Message, "Working directory: "+run.dir) {
		t.Errorf("question:\n%s", q.Message)
	}
	answers := mcp.InputResponseMap{"approval": approve}
	retry := func(args map[string]any, state string) *mcp.CallToolResult {
		t.Helper()
		res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: args, InputResponses: answers, RequestState: state})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	st := []byte(first.RequestState)
	st[len(st)/2] ^= 1
	wantRefused(t, retry(run.args, string(st)), "altered or forged")
	changed := map[string]any{}
	for k, v := range run.args {
		changed[k] = v
	}
	changed["code"] = run.args["code"].(string) + "print('and more')\n"
	wantRefused(t, retry(changed, first.RequestState), "different call")
	if got := run.runs(t); got != 0 {
		t.Fatalf("the code ran %d times on a tampered retry", got)
	}
	if r := decodeExec(t, retry(run.args, first.RequestState)); r.Status != "success" {
		t.Fatalf("the untouched retry: %+v", r)
	}
	wantRefused(t, retry(run.args, first.RequestState), "already used")
	if got := run.runs(t); got != 1 {
		t.Errorf("the code ran %d times, want once", got)
	}
	want := []string{"execute_code refused", "execute_code refused", "execute_code approved", "execute_code refused"}
	if diff := cmp.Diff(want, decisions(t, s)); diff != "" {
		t.Errorf("logged decisions (-want +got):\n%s", diff)
	}
}

// TestApprovalRisky: with CODEXEC_APPROVAL=risky and a rules file, only
// what the rules call risky is asked about; the rest runs unasked.
func TestApprovalRisky(t *testing.T) {
	root := approvalRoot(t)
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("commands: [echo]\ncode_patterns: ['\\bsubprocess\\b']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &asker{answer: decline}
	s := startApproval(t, root, "", &mcp.ClientOptions{ElicitationHandler: a.handle},
		"CODEXEC_APPROVAL=risky", "CODEXEC_APPROVAL_RULES="+rules, "ALLOWED_COMMANDS=echo,ls")
	plain := newApprovalRun(t, root)
	if r := decodeExec(t, s.call("execute_code", plain.args)); r.Status != "success" {
		t.Errorf("plain code: %+v", r)
	}
	risky := newApprovalRun(t, root)
	risky.args["code"] = "import subprocess\n" + risky.args["code"].(string)
	wantRefused(t, s.call("execute_code", risky.args), "declined")
	if res := s.call("execute_command", map[string]any{"command": "echo hi"}); res.IsError {
		t.Errorf("a listed command: %s", text(res))
	}
	wantRefused(t, s.call("execute_command", map[string]any{"command": "ls /"}), "declined")
	if plain.runs(t) != 1 || risky.runs(t) != 0 {
		t.Errorf("runs: plain %d (want 1), risky %d (want 0)", plain.runs(t), risky.runs(t))
	}
	q := a.asked()
	if len(q) != 2 || !strings.Contains(q[0], `matches the pattern "\\bsubprocess\\b"`) || !strings.Contains(q[1], "outside the rules' list") {
		t.Errorf("questions: %q", q)
	}
}

// TestApprovalBadRules: a rules file that does not parse stops the start
// with an error naming the setting and the problem.
func TestApprovalBadRules(t *testing.T) {
	sameInEveryMode(t, "the start-up check runs before any run")
	rules := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(rules, []byte("code_patterns: ['(']\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "CODEXEC_DATA_DIR=" + t.TempDir(),
		"CODEXEC_SANDBOX_MODE=subprocess", "CODEXEC_APPROVAL=risky", "CODEXEC_APPROVAL_RULES=" + rules}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "CODEXEC_APPROVAL_RULES") || !strings.Contains(string(out), "code_patterns[0]") {
		t.Errorf("start with a bad rules file: %v\n%s", err, out)
	}
}

// protocolName names a subtest by the protocol its client asks for.
func protocolName(protocol string) string {
	if protocol == "" {
		return "2026-07-28"
	}
	return protocol
}

// TestApprovalEveryRunningTool: under CODEXEC_APPROVAL=always every tool
// that runs code or a program asks first, shows what it would run (the
// saved code of run_script, not only its name), and runs nothing when
// declined; tools that run nothing are not asked about.
func TestApprovalEveryRunningTool(t *testing.T) {
	sameInEveryMode(t, "refused calls run nothing in any mode; the setup calls are not gated")
	root := approvalRoot(t)
	a := &asker{answer: decline}
	s := startApproval(t, root, "", &mcp.ClientOptions{ElicitationHandler: a.handle}, "ALLOWED_COMMANDS=echo")
	var sess, ctxOut struct {
		SessionID string `json:"session_id"`
		ContextID string `json:"context_id"`
	}
	if res := s.callInto("start_session", map[string]any{"language": "python"}, &sess); res.IsError {
		t.Fatalf("start_session: %s", text(res))
	}
	if res := s.callInto("create_context", map[string]any{"name": "gate"}, &ctxOut); res.IsError {
		t.Fatalf("create_context: %s", text(res))
	}
	if res := s.call("save_script", map[string]any{"name": "gated", "language": "python", "code": "print('saved code 42')"}); res.IsError {
		t.Fatalf("save_script: %s", text(res))
	}
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		shown string
	}{
		{"execute_code", map[string]any{"language": "bash", "code": "echo from-execute-code"}, "echo from-execute-code"},
		{"send_to_session", map[string]any{"session_id": sess.SessionID, "code": "x = 'from-session'"}, "x = 'from-session'"},
		{"run_code", map[string]any{"context_id": ctxOut.ContextID, "code": "y = 'from-context'"}, "y = 'from-context'"},
		{"run_script", map[string]any{"name": "gated", "args": []string{"a1"}}, "print('saved code 42')"},
		{"execute_command", map[string]any{"command": "echo from-command"}, "Command:\necho from-command"},
		{"execute_process", map[string]any{"file": "echo", "args": []string{"from-process"}}, "Program: echo"},
		{"install_package", map[string]any{"language": "python", "package": "left-pad-nonexistent"}, "Package: left-pad-nonexistent"},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			before := len(a.asked())
			wantRefused(t, s.call(tc.tool, tc.args), "declined")
			q := a.asked()
			if len(q) != before+1 || !strings.Contains(q[len(q)-1], tc.shown) {
				t.Errorf("questions %q: want one more showing %q", q[before:], tc.shown)
			}
		})
	}
	// The one approved run is the only one the history has.
	a.answerWith(approve)
	if r := decodeExec(t, s.call("execute_code", map[string]any{"language": "bash", "code": "echo from-approved"})); r.Stdout != "from-approved\n" {
		t.Errorf("approved run: %+v", r)
	}
	want := []string{"execute_code declined", "send_to_session declined", "run_code declined", "run_script declined",
		"execute_command declined", "execute_process declined", "install_package declined", "execute_code approved"}
	if diff := cmp.Diff(want, decisions(t, s)); diff != "" {
		t.Errorf("logged decisions (-want +got):\n%s", diff)
	}
	var logs struct {
		Total   int `json:"total_count"`
		Results []struct {
			Code string `json:"code_preview"`
		} `json:"results"`
	}
	s.callInto("search_execution_logs", map[string]any{"query": "from"}, &logs)
	if logs.Total != 1 || len(logs.Results) != 1 || !strings.Contains(logs.Results[0].Code, "from-approved") {
		t.Errorf("search_execution_logs: %+v, want the approved run only", logs)
	}
}

// TestApprovalHTTP: over Streamable HTTP, in the stateless protocol, each
// principal's client is asked about its own calls, and the log names who
// decided what.
func TestApprovalHTTP(t *testing.T) {
	if testMode() == "docker" {
		t.Skip("the HTTP harness starts no docker image; the gate's docker-mode runs are checked over stdio")
	}
	root := approvalRoot(t)
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_APPROVAL=always", "CODEXEC_WRITABLE_ROOTS="+root)
	connect := func(token string, a *asker) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-http", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: a.handle})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	aliceAsks, bobAsks := &asker{answer: approve}, &asker{answer: decline}
	alice, bob := connect(aliceToken, aliceAsks), connect(bobToken, bobAsks)
	// The go-sdk client speaks the stateless protocol over HTTP, so the
	// question comes back as the call's answer with a signed state.
	if ir := alice.InitializeResult(); ir == nil || ir.ProtocolVersion != "2026-07-28" || alice.ID() != "" {
		t.Fatalf("client negotiated %+v with session %q, want the stateless 2026-07-28 protocol", ir, alice.ID())
	}
	call := func(cs *mcp.ClientSession, run approvalRun) *mcp.CallToolResult {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Arguments: run.args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ranA, ranB := newApprovalRun(t, root), newApprovalRun(t, root)
	for _, d := range []string{ranA.dir, ranB.dir} {
		// Over HTTP a principal gets no owner's rights here, so the sandbox
		// user writes by the directory's permissions.
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	if r := decodeExec(t, call(alice, ranA)); r.Status != "success" {
		t.Errorf("alice's approved run: %+v", r)
	}
	wantRefused(t, call(bob, ranB), "declined")
	if ranA.runs(t) != 1 || ranB.runs(t) != 0 || len(aliceAsks.asked()) != 1 || len(bobAsks.asked()) != 1 {
		t.Errorf("runs %d/%d (want 1/0), questions %d/%d (want 1/1)", ranA.runs(t), ranB.runs(t), len(aliceAsks.asked()), len(bobAsks.asked()))
	}
	var got []string
	for _, m := range approvalLog(t, &server{DataDir: s.DataDir}) {
		got = append(got, m["owner"].(string)+" "+m["decision"].(string))
	}
	if diff := cmp.Diff([]string{"alice approved", "bob declined"}, got); diff != "" {
		t.Errorf("logged decisions (-want +got):\n%s", diff)
	}
}
