package sessiontools

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/execresult"
	"github.com/codexec/codexec/internal/mcpserver/netarg"
	"github.com/codexec/codexec/internal/mcpserver/runstart"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/session"
)

// StartSessionIn is start_session's input.
type StartSessionIn struct {
	Language   string     `json:"language" jsonschema:"python|node"`
	Name       string     `json:"name,omitempty"`
	WorkingDir string     `json:"working_dir,omitempty"`
	Network    *netarg.In `json:"network,omitempty" jsonschema:"as execute_code's"`
}

// StartSessionOut is start_session's output.
type StartSessionOut struct {
	Success   bool      `json:"success"`
	SessionID string    `json:"session_id"`
	Language  string    `json:"language"`
	Name      string    `json:"name"`
	Pid       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
}

// SendIn is send_to_session's input.
type SendIn struct {
	SessionID  string     `json:"session_id"`
	Code       string     `json:"code"`
	TimeoutMs  *tool.Int  `json:"timeout_ms,omitempty"`
	Network    *netarg.In `json:"network,omitempty" jsonschema:"replaces the session's, before this code"`
	Background bool       `json:"background,omitempty"`
}

// SessionIDIn names one session.
type SessionIDIn struct {
	SessionID string `json:"session_id"`
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
	Kind              string    `json:"kind"`   // session or context
	Status            string    `json:"status"` // active; paused (no process; resumes on next use); dead when the interpreter exited on its own; lost or unreachable (remote.go)
	Language          string    `json:"language"`
	Name              string    `json:"name"`
	StartedAt         time.Time `json:"started_at"`
	LastActivityAt    time.Time `json:"last_activity_at"`
	ExecutionsCount   int       `json:"executions_count"`
	Pid               int       `json:"pid"`
	MemoryMB          float64   `json:"memory_mb"` // resident memory as last read from /proc
	PackagesInstalled []string  `json:"packages_installed"`
	CheckpointBytes   int64     `json:"checkpoint_bytes,omitempty"` // size of its latest checkpoint
	// With replicas (remote.go): the one holding it; when it stopped, for
	// status lost; why the session is shown from the registry alone, for
	// status unreachable.
	Replica string     `json:"replica,omitempty"`
	LostAt  *time.Time `json:"lost_at,omitempty"`
	Note    string     `json:"note,omitempty"`
}

// ListSessionsOut is list_sessions' output.
type ListSessionsOut struct {
	Sessions []SessionInfo `json:"sessions"`
}

func (s *toolset) registerSessions() {
	if s.deps.Sessions == nil {
		return
	}
	tool.Add(s.r, &mcp.Tool{Name: "start_session", Title: "Start session",
		Description: "Start a persistent python or node interpreter.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(false), OpenWorldHint: tool.Ptr(false)}}, s.startSession)
	tool.Add(s.r, &mcp.Tool{Name: "send_to_session", Title: "Run code in session", OutputSchema: execresult.RunOutputSchema(),
		Description: "Run code in a session or context; result as execute_code. A timeout interrupts the code and keeps state if it can.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(s.openWorld())}}, s.sendToSession)
	tool.Add(s.r, &mcp.Tool{Name: "close_session", Title: "Close session",
		Description: "Stop a session now.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(false)}}, s.closeSession)
	tool.Add(s.r, &mcp.Tool{Name: "list_sessions", Title: "List sessions",
		Description: "List live sessions and contexts.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.listSessions)
	s.registerCheckpoints()
}

func (s *toolset) startSession(ctx context.Context, req *mcp.CallToolRequest, in StartSessionIn) (*mcp.CallToolResult, StartSessionOut, error) {
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return nil, StartSessionOut{}, err
	}
	info, err := s.deps.Sessions.Start(ctx, session.StartRequest{Kind: session.KindSession, Language: in.Language,
		Name: in.Name, WorkingDir: in.WorkingDir, Call: callinfo.CallContext(req), Network: network})
	if err != nil {
		return nil, StartSessionOut{}, tool.Classify(err)
	}
	out := StartSessionOut{Success: true, SessionID: info.ID, Language: info.Language, Name: info.Name, Pid: info.Pid, StartedAt: info.StartedAt}
	return nil, out, nil
}

func (s *toolset) sendToSession(ctx context.Context, req *mcp.CallToolRequest, in SendIn) (*mcp.CallToolResult, engine.Result, error) {
	if in.Background {
		return s.sendBackground(ctx, req, in)
	}
	timeout, err := s.deps.Engine.ResolveTimeout(tool.IntPtr(in.TimeoutMs), nil)
	if err != nil {
		return execresult.Fail(err)
	}
	replace, err := netarg.Replace(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	obs, finish := callinfo.StreamOutput(ctx, req)
	defer finish()
	res, err := s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: in.SessionID, Code: in.Code, Timeout: timeout,
		Tool: "send_to_session", Call: callinfo.CallContext(req), Observe: obs, Network: replace})
	if err != nil {
		return execresult.Fail(err)
	}
	return s.deps.Files.WithFiles(ctx, execresult.Text(res), res), res, nil
}

func (s *toolset) closeSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionIDIn) (*mcp.CallToolResult, CloseSessionOut, error) {
	ci, err := s.deps.Sessions.Stop(ctx, in.SessionID, "closed", false)
	if err != nil {
		return nil, CloseSessionOut{}, tool.Classify(err)
	}
	return nil, CloseSessionOut{Success: true, SessionID: ci.ID, DurationTotalMs: ci.DurationTotal.Milliseconds(), ExecutionsCount: ci.Executions}, nil
}

func (s *toolset) listSessions(ctx context.Context, _ *mcp.CallToolRequest, _ tool.EmptyIn) (*mcp.CallToolResult, ListSessionsOut, error) {
	out := ListSessionsOut{Sessions: []SessionInfo{}}
	for _, i := range s.deps.Sessions.List(ctx) {
		out.Sessions = append(out.Sessions, SessionInfo{SessionID: i.ID, Kind: i.Kind, Status: i.Status, Language: i.Language,
			Name: i.Name, StartedAt: i.StartedAt, LastActivityAt: i.LastActivity.UTC(), ExecutionsCount: i.Executions,
			Pid: i.Pid, MemoryMB: float64(int(i.MemoryMB*10)) / 10, PackagesInstalled: i.Packages, CheckpointBytes: i.CheckpointBytes})
	}
	if s.deps.Peers != nil {
		var err error
		if out.Sessions, err = s.remoteSessions(ctx, out.Sessions); err != nil {
			return nil, ListSessionsOut{}, err
		}
	}
	return nil, out, nil
}

// sendBackground runs send_to_session's code as a background run: the call
// returns once the session took the code (a send already running in the
// session is waited for, as in the foreground). Cancelling the run
// interrupts the code as cancelling the call does.
func (s *toolset) sendBackground(ctx context.Context, req *mcp.CallToolRequest, in SendIn) (*mcp.CallToolResult, engine.Result, error) {
	limit := s.deps.BackgroundMax
	timeout, err := s.deps.Engine.ResolveTimeoutUpTo(tool.IntPtr(in.TimeoutMs), nil, limit, limit, "CODEXEC_BACKGROUND_MAX_TIMEOUT_MS")
	if err != nil {
		return execresult.Fail(err)
	}
	replace, err := netarg.Replace(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	call := callinfo.CallContext(req)
	v, out, err := runstart.Start(ctx, req, s.deps.Runs, runs.Job{Tool: "send_to_session",
		Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
			res, err := s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: in.SessionID, Code: in.Code, Timeout: timeout,
				Tool: "send_to_session", Call: call, Observe: obs, Network: replace})
			if err != nil {
				return runs.Outcome{}, tool.Classify(err)
			}
			sessionStopNote(ctx, &res)
			return runs.Outcome{Status: res.Status, Result: res}, nil
		}})
	switch {
	case err != nil:
		return execresult.Fail(err)
	case out != nil:
		res, _ := out.Result.(engine.Result)
		return execresult.Text(res), res, nil
	}
	res := engine.Result{ExecutionID: v.ExecutionID, Status: runs.StatusRunning, Artifacts: []string{}}
	return runstart.Text(v.ExecutionID), res, nil
}

// sessionStopNote puts why a cancelled background send was stopped
// (cancel_run, a task's cancel, shutdown) before the session's own note,
// which says whether the session's state survived.
func sessionStopNote(ctx context.Context, res *engine.Result) {
	why := runs.Stopped(ctx)
	if why == "" || res.Status != engine.StatusCancelled {
		return
	}
	if res.ErrorMessage != nil {
		why += ". " + *res.ErrorMessage
	}
	res.ErrorMessage = &why
}
