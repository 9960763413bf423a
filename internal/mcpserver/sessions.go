package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/session"
)

// StartSessionIn is start_session's input (seed 000).
type StartSessionIn struct {
	Language   string `json:"language" jsonschema:"python | node (javascript, js accepted)"`
	Name       string `json:"name,omitempty" jsonschema:"optional human-readable name"`
	WorkingDir string `json:"working_dir,omitempty" jsonschema:"directory the session runs in (default: a fresh one under CODEXEC_SANDBOX_DIR, removed on close)"`
}

// StartSessionOut is start_session's output.
type StartSessionOut struct {
	Success   bool      `json:"success"`
	SessionID string    `json:"session_id" jsonschema:"id to pass to send_to_session (sess_…)"`
	Language  string    `json:"language"`
	Name      string    `json:"name"`
	Pid       int       `json:"pid" jsonschema:"host pid of the session's top process"`
	StartedAt time.Time `json:"started_at"`
}

// SendIn is send_to_session's input.
type SendIn struct {
	SessionID string `json:"session_id" jsonschema:"session from start_session (or a context id)"`
	Code      string `json:"code" jsonschema:"code to run; builds on the state of earlier sends. A trailing expression's value is printed, like a notebook"`
	TimeoutMs *int   `json:"timeout_ms,omitempty" jsonschema:"timeout in milliseconds (default CODEXEC_DEFAULT_TIMEOUT_MS); on timeout the code is interrupted and the session kept if it answers"`
}

// SessionIDIn names one session.
type SessionIDIn struct {
	SessionID string `json:"session_id" jsonschema:"the session to act on"`
}

// CloseSessionOut is close_session's output.
type CloseSessionOut struct {
	Success         bool   `json:"success"`
	SessionID       string `json:"session_id"`
	DurationTotalMs int64  `json:"duration_total_ms"`
	ExecutionsCount int    `json:"executions_count"`
}

// SessionInfo is one entry of list_sessions.
type SessionInfo struct {
	SessionID         string    `json:"session_id"`
	Kind              string    `json:"kind" jsonschema:"session (start_session) or context (create_context)"`
	Status            string    `json:"status" jsonschema:"active, or dead when the interpreter exited on its own"`
	Language          string    `json:"language"`
	Name              string    `json:"name"`
	StartedAt         time.Time `json:"started_at"`
	LastActivityAt    time.Time `json:"last_activity_at"`
	ExecutionsCount   int       `json:"executions_count"`
	Pid               int       `json:"pid"`
	MemoryMB          float64   `json:"memory_mb" jsonschema:"resident memory of the interpreter as last read from /proc"`
	PackagesInstalled []string  `json:"packages_installed"`
}

// ListSessionsOut is list_sessions' output.
type ListSessionsOut struct {
	Sessions []SessionInfo `json:"sessions"`
}

// EmptyIn is the input of tools without parameters.
type EmptyIn struct{}

func (s *Server) registerSessions() {
	if s.deps.Sessions == nil {
		return
	}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "start_session", Title: "Start a persistent session",
		Description: "Start a persistent python or node REPL session. Variables, imports and loaded data persist across send_to_session calls until close_session or the idle timeout.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}}, s.startSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "send_to_session", Title: "Run code in a session",
		Description: "Run code in an existing session; it sees everything earlier sends defined. Returns stdout, stderr (with the traceback on error), status and artifacts. A bare trailing expression is printed.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), OpenWorldHint: ptr(!s.deps.Engine.Backend().Isolated())}}, s.sendToSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "close_session", Title: "Close a session",
		Description: "Stop a session's interpreter and delete its workspace (if codexec created it).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: false, DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)}}, s.closeSession)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_sessions", Title: "List sessions",
		Description: "List sessions and contexts with language, age, activity, memory and installed packages.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}}, s.listSessions)
}

func (s *Server) startSession(ctx context.Context, req *mcp.CallToolRequest, in StartSessionIn) (*mcp.CallToolResult, StartSessionOut, error) {
	info, err := s.deps.Sessions.Start(ctx, session.StartRequest{Kind: session.KindSession, Language: in.Language,
		Name: in.Name, WorkingDir: in.WorkingDir, Call: callContext(req)})
	if err != nil {
		return nil, StartSessionOut{}, err
	}
	out := StartSessionOut{Success: true, SessionID: info.ID, Language: info.Language, Name: info.Name, Pid: info.Pid, StartedAt: info.StartedAt}
	return nil, out, nil
}

func (s *Server) sendToSession(ctx context.Context, req *mcp.CallToolRequest, in SendIn) (*mcp.CallToolResult, engine.Result, error) {
	timeout, err := s.deps.Engine.ResolveTimeout(in.TimeoutMs, nil)
	if err != nil {
		return invalid(err.Error())
	}
	res, err := s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: in.SessionID, Code: in.Code, Timeout: timeout,
		Tool: "send_to_session", Call: callContext(req)})
	if err != nil {
		return invalid(sessionError(err))
	}
	return s.withFiles(ctx, resultText(res), res), res, nil
}

func sessionError(err error) string {
	if errors.Is(err, session.ErrNotFound) {
		return "unknown session: " + strings.TrimPrefix(err.Error(), session.ErrNotFound.Error()+": ") + " (list_sessions shows the live ones)"
	}
	return err.Error()
}

func (s *Server) closeSession(_ context.Context, _ *mcp.CallToolRequest, in SessionIDIn) (*mcp.CallToolResult, CloseSessionOut, error) {
	ci, err := s.deps.Sessions.Stop(in.SessionID, "closed", false)
	if err != nil {
		return nil, CloseSessionOut{}, errors.New(sessionError(err))
	}
	return nil, CloseSessionOut{Success: true, SessionID: ci.ID, DurationTotalMs: ci.DurationTotal.Milliseconds(), ExecutionsCount: ci.Executions}, nil
}

func (s *Server) listSessions(context.Context, *mcp.CallToolRequest, EmptyIn) (*mcp.CallToolResult, ListSessionsOut, error) {
	out := ListSessionsOut{Sessions: []SessionInfo{}}
	for _, i := range s.deps.Sessions.List() {
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: i.ID, Kind: i.Kind, Status: i.Status, Language: i.Language,
			Name: i.Name, StartedAt: i.StartedAt, LastActivityAt: i.LastActivity.UTC(), ExecutionsCount: i.Executions,
			Pid: i.Pid, MemoryMB: float64(int(i.MemoryMB*10)) / 10, PackagesInstalled: i.Packages})
	}
	return nil, out, nil
}

// sessionsExecutor returns what runs execute_code with a session_id.
func (s *Server) sessionsExecutor() (sessionExecutor, bool) {
	if s.deps.Sessions == nil {
		return nil, false
	}
	return sessionRunner{s}, true
}

type sessionRunner struct{ s *Server }

// ExecuteInSession runs execute_code's code in a session (seed 003's
// session_id). The session's language wins; a different language is an error.
func (r sessionRunner) ExecuteInSession(ctx context.Context, sessionID, code string, in ExecuteCodeIn) (engine.Result, error) {
	sess, err := r.s.deps.Sessions.Get(sessionID)
	if err != nil {
		return engine.Result{}, errors.New(sessionError(err))
	}
	if in.Language != "" {
		if lang, err := runtime.Normalize(in.Language); err != nil || lang != sess.Language {
			return engine.Result{}, fmt.Errorf("session %s runs %s, not %s", sess.ID, sess.Language, in.Language)
		}
	}
	timeout, err := r.s.deps.Engine.ResolveTimeout(in.TimeoutMs, in.Timeout)
	if err != nil {
		return engine.Result{}, err
	}
	return r.s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: sess.ID, Code: code, Timeout: timeout, Tool: "execute_code"})
}
