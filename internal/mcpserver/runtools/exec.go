package runtools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/execresult"
	"github.com/codexec/codexec/internal/mcpserver/netarg"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/session"
)

// ExecuteCodeIn accepts every documented shape of execute_code: language,
// code, timeout_ms and working_dir; stdin, timeout in seconds and session_id;
// and code mode's code, intent, context and tools.
type ExecuteCodeIn struct {
	Language   string         `json:"language,omitempty" jsonschema:"python|node|javascript|typescript|bash; omit for code mode"`
	Code       string         `json:"code"`
	Stdin      *string        `json:"stdin,omitempty"`
	TimeoutMs  *tool.Int      `json:"timeout_ms,omitempty"`
	Timeout    *tool.Int      `json:"timeout,omitempty" jsonschema:"seconds, 1-300; instead of timeout_ms"`
	WorkingDir string         `json:"working_dir,omitempty" jsonschema:"default: a fresh sandbox dir"`
	SessionID  string         `json:"session_id,omitempty" jsonschema:"run in this session; an unknown id creates it"`
	Intent     string         `json:"intent,omitempty" jsonschema:"code mode: the task"`
	Context    map[string]any `json:"context,omitempty" jsonschema:"code mode: data bound as variables"`
	Files      []string       `json:"files,omitempty" jsonschema:"upload_ids to place first"`
	Tools      []string       `json:"tools,omitempty" jsonschema:"code mode: upstream tools (server.tool globs)"`
	Background bool           `json:"background,omitempty"`
	Network    *netarg.In     `json:"network,omitempty" jsonschema:"allow: hosts the code may reach (host, *.suffix, host:port) within CODEXEC_EGRESS_ALLOW; none if omitted; with session_id replaces the session's"`
}

func (s *toolset) registerExec() {
	tool.Add(s.r, &mcp.Tool{
		Name: "execute_code", Title: "Execute code", OutputSchema: execresult.OutputSchema(),
		Description: "Run code in a fresh sandbox. A failing or timed-out program is a normal result (see status; exit_code null if killed). " +
			s.timeoutText() + " No language, or intent/context: TypeScript code mode.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(s.openWorld())},
	}, s.executeCode)
}

// timeoutText states the timeout defaults once, for the tools that take
// timeout_ms.
func (s *toolset) timeoutText() string {
	c := s.deps.Config
	return fmt.Sprintf("timeout_ms default %d, max %d.", c.DefaultTimeout.Milliseconds(), c.MaxTimeout.Milliseconds())
}

func (s *toolset) executeCode(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn) (*mcp.CallToolResult, engine.Result, error) {
	r, res, err := s.executeCodeWithFiles(ctx, req, in)
	return s.deps.Files.WithFiles(ctx, r, res), res, err
}

func (s *toolset) executeCodeWithFiles(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn) (*mcp.CallToolResult, engine.Result, error) {
	if in.Background {
		return s.executeCodeBackground(ctx, req, in)
	}
	obs, finish := callinfo.StreamOutput(ctx, req)
	defer finish()
	if in.SessionID != "" {
		return s.executeInSession(ctx, req, in, obs)
	}
	timeout, err := s.deps.Engine.ResolveTimeout(tool.IntPtr(in.TimeoutMs), tool.IntPtr(in.Timeout))
	if err != nil {
		return execresult.Fail(err)
	}
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	prepare, err := s.deps.Files.StageUploads(ctx, in.Files)
	if err != nil {
		return execresult.Fail(err)
	}
	if codeMode, err := isCodeMode(in); err != nil {
		return execresult.Fail(tool.Coded(tool.CodeInvalidLanguage, "%v", err))
	} else if codeMode {
		return s.executeCodeMode(ctx, req, in, timeout, obs, prepare, network)
	}
	res, err := s.deps.Engine.Execute(ctx, engine.Request{
		Language: in.Language, Code: in.Code, Stdin: in.Stdin, Timeout: timeout, WorkingDir: in.WorkingDir,
		Tool: "execute_code", Context: callinfo.CallContext(req), Observe: obs, Prepare: prepare, Network: network,
	})
	if err != nil {
		return execresult.Fail(err)
	}
	return execresult.Text(res), res, nil
}

// executeCodeBackground starts execute_code's run in the background: its
// arguments are checked and its files staged now, and the call returns once
// the run has started (runtools.background).
func (s *toolset) executeCodeBackground(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn) (*mcp.CallToolResult, engine.Result, error) {
	if in.SessionID != "" {
		return execresult.Fail(tool.Invalidf("background runs are one-shot: omit session_id, or background"))
	}
	timeout, err := s.backgroundTimeout(in.TimeoutMs, in.Timeout)
	if err != nil {
		return execresult.Fail(err)
	}
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	prepare, err := s.deps.Files.StageUploads(ctx, in.Files)
	if err != nil {
		return execresult.Fail(err)
	}
	codeMode, err := isCodeMode(in)
	if err != nil {
		return execresult.Fail(tool.Coded(tool.CodeInvalidLanguage, "%v", err))
	}
	lang, err := runLanguage(in, codeMode)
	if err != nil {
		return execresult.Fail(tool.Coded(tool.CodeInvalidLanguage, "%v", err))
	}
	call := callinfo.CallContext(req)
	v, out, err := s.background(ctx, req, runs.Job{Tool: "execute_code", Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
		if codeMode {
			_, res, err := s.executeCodeMode(ctx, req, in, timeout, obs, prepare, network)
			return execOutcome(ctx, res, err)
		}
		res, err := s.deps.Engine.Execute(ctx, engine.Request{Language: in.Language, Code: in.Code, Stdin: in.Stdin, Timeout: timeout,
			WorkingDir: in.WorkingDir, Tool: "execute_code", Context: call, Observe: obs, Prepare: prepare, Network: network})
		return execOutcome(ctx, res, err)
	}})
	return execAnswer(v, out, err, lang)
}

// runLanguage is the canonical language a one-shot run of in reports.
func runLanguage(in ExecuteCodeIn, codeMode bool) (string, error) {
	if codeMode {
		return codeModeLanguage(in.Language)
	}
	return runtime.Normalize(in.Language)
}

// isCodeMode reports whether a call runs in code mode: no language, or
// an intent, context or tools, which TypeScript/JavaScript and Python code
// can use.
func isCodeMode(in ExecuteCodeIn) (bool, error) {
	if in.Intent == "" && in.Context == nil && len(in.Tools) == 0 && in.Language != "" {
		return false, nil
	}
	if in.Language == "" {
		return true, nil
	}
	lang, err := codeModeLanguage(in.Language)
	return lang != "", err
}

// codeModeLanguage maps a language to the code-mode runtime: TypeScript for
// TypeScript/JavaScript, or Python ("" when the language is empty).
func codeModeLanguage(language string) (string, error) {
	if language == "" {
		return runtime.TypeScript, nil
	}
	lang, err := runtime.Normalize(language)
	if err != nil {
		return "", err
	}
	switch lang {
	case runtime.TypeScript, runtime.Node:
		return runtime.TypeScript, nil
	case runtime.Python:
		return runtime.Python, nil
	}
	return "", fmt.Errorf("intent/context/tools (code mode) run TypeScript/JavaScript or Python, not %s", lang)
}

func (s *toolset) executeCodeMode(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn, timeout time.Duration, obs output.Observer,
	prepare func(*files.Root) error, network egress.Policy) (*mcp.CallToolResult, engine.Result, error) {
	lang, err := codeModeLanguage(in.Language)
	if err != nil {
		return execresult.Fail(tool.Coded(tool.CodeInvalidLanguage, "%v", err))
	}
	if in.Timeout == nil && in.TimeoutMs == nil && !in.Background {
		timeout = s.deps.Config.CodeMode.Timeout
	}
	tools, err := s.injectedTools(ctx, in.Tools, in.Intent)
	if err != nil {
		return execresult.Fail(err)
	}
	cm := s.deps.Config.CodeMode
	creq := codemode.Request{Language: lang, Code: in.Code, Intent: in.Intent, Context: in.Context, Stdin: in.Stdin,
		Timeout: timeout, WorkingDir: in.WorkingDir, Call: callinfo.CallContext(req), Tools: tools, MemoryBytes: cm.MemoryBytes, Observe: obs,
		Prepare: prepare, Bridge: codemode.BridgeOptions{MaxCalls: cm.MaxCalls}, Network: network}
	if up := s.deps.Upstreams; up != nil {
		creq.Caller = up
	}
	res, err := codemode.Execute(ctx, s.deps.Engine, creq)
	if err != nil {
		return execresult.Fail(err)
	}
	res = fitResult(res)
	return codeModeText(res), res, nil
}

// codeModeText renders code mode's {result, logs, metrics} (or error) as JSON
// text, the form code-mode clients parse. A code error is an MCP tool error
// (isError), so MCP clients see a failed program as a failed call.
func codeModeText(r engine.Result) *mcp.CallToolResult {
	out := map[string]any{"result": r.Value, "logs": r.LogLines(), "metrics": r.Metrics}
	if r.CodeError != nil {
		out["error"] = r.CodeError
	}
	b, _ := json.Marshal(out) // compact: every byte is paid in the agent's context
	return &mcp.CallToolResult{IsError: r.CodeError != nil, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

func (s *toolset) executeInSession(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn, obs output.Observer) (*mcp.CallToolResult, engine.Result, error) {
	if s.deps.Sessions == nil {
		return execresult.Fail(tool.Coded(tool.CodeNotEnabled, "session_id given but persistent sessions are not enabled on this server (CODEXEC_TOOLSETS)"))
	}
	res, err := s.runInSession(ctx, req, in, obs)
	if err != nil {
		return execresult.Fail(err)
	}
	return execresult.Text(res), res, nil
}

// runInSession runs execute_code's code in the session named by its
// session_id. An unknown id that is a valid caller-chosen id creates the
// session on first use, in the call's language; afterwards the session's
// language wins and a different one is an error.
func (s *toolset) runInSession(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn, obs output.Observer) (engine.Result, error) {
	timeout, err := s.deps.Engine.ResolveTimeout(tool.IntPtr(in.TimeoutMs), tool.IntPtr(in.Timeout))
	if err != nil {
		return engine.Result{}, err
	}
	replace, err := netarg.Replace(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return engine.Result{}, err
	}
	sess, created, err := s.openSession(ctx, req, in, replace)
	if err != nil {
		return engine.Result{}, err
	}
	if created {
		replace = nil // the session started with it
	}
	if err := s.deps.Files.UploadsToSession(ctx, sess.ID, in.Files); err != nil {
		return engine.Result{}, err
	}
	if in.Language != "" {
		if lang, err := runtime.Normalize(in.Language); err != nil || lang != sess.Language {
			return engine.Result{}, tool.Coded(tool.CodeInvalidLanguage, "session %s runs %s, not %s: omit language or start another session", sess.ID, sess.Language, in.Language)
		}
	}
	return s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: sess.ID, Code: in.Code, Timeout: timeout,
		Tool: "execute_code", Call: callinfo.CallContext(req), Observe: obs, Network: replace})
}

// openSession finds the session, or creates it under the caller's id with
// network (nil: none, or the ceiling by CODEXEC_EGRESS_DEFAULT); created
// says which.
func (s *toolset) openSession(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCodeIn, network *egress.Policy) (*session.Session, bool, error) {
	if sess, err := s.deps.Sessions.Get(ctx, in.SessionID); err == nil {
		return sess, false, nil
	}
	if in.Language == "" {
		return nil, false, fmt.Errorf("no session %q yet: pass language (python or node) to create it", in.SessionID)
	}
	p, err := s.startNetwork(ctx, network)
	if err != nil {
		return nil, false, err
	}
	sess, _, err := s.deps.Sessions.Open(ctx, in.SessionID, session.StartRequest{Kind: session.KindSession,
		Language: in.Language, Call: callinfo.CallContext(req), Network: p})
	if err != nil {
		return nil, false, err
	}
	return sess, true, nil
}

// startNetwork is the policy of a session started with network (already
// resolved), or, without, what the server gives a run that asks for none.
func (s *toolset) startNetwork(ctx context.Context, network *egress.Policy) (egress.Policy, error) {
	if network != nil {
		return *network, nil
	}
	return netarg.Resolve(ctx, s.deps.Egress, nil)
}
