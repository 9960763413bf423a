package session

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runreport"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/tracing"
)

// ExecRequest is code to run in a session. Timeout zero means the engine's
// default.
type ExecRequest struct {
	Session string
	Code    string
	Timeout time.Duration
	Tool    string
	Call    execlog.CallContext
	// Observe, if set, sees the code's stdout/stderr as it runs.
	Observe output.Observer
	// Network, if set, replaces the session's network policy whole before
	// the code runs (already resolved within the caller's ceiling).
	Network *egress.Policy
}

// Exec runs code in one of ctx's principal's sessions and returns an
// engine.Result (the same shape as execute_code). Unknown sessions return
// ErrNotFound; a dead session returns an error saying how it died.
// Cancelling ctx interrupts the code like a timeout does (status
// cancelled); the result says whether the session's state survived.
func (m *Manager) Exec(ctx context.Context, req ExecRequest) (engine.Result, error) {
	waitStart := time.Now()
	s, err := m.lockLive(ctx, req.Session)
	tracing.Waited(ctx, tracer, "session.acquire", waitStart, err)
	if err != nil {
		return engine.Result{}, err
	}
	defer s.execMu.Unlock()
	if req.Timeout <= 0 {
		req.Timeout = m.opts.DefaultTimeout
	}
	if s.isDead() {
		if rec := s.ck.Current(); rec != nil {
			return engine.Result{}, errcode.New(errcode.InvalidParams, "session %s is dead (%s): resume_session restores its checkpoint of %.0f s ago, or close it and start a new one",
				s.ID, s.deathReason(), sessionckpt.AgeS(rec.TakenAt))
		}
		return engine.Result{}, errcode.New(errcode.InvalidParams, "session %s is dead (%s); its state is lost: close it and start a new one", s.ID, s.deathReason())
	}
	if !m.registered(s) {
		return engine.Result{}, errcode.New(errcode.InvalidParams, "session %s was closed", s.ID)
	}
	started := time.Now()
	ws, err := s.ws.Open()
	if err != nil {
		return engine.Result{}, fmt.Errorf("session %s: workspace: %w", s.ID, err)
	}
	defer ws.Close()
	id := execlog.NewID("exec_")
	m.logStarted(ctx, s, req, id, started)
	before := s.snaps.take(ws)
	if req.Network != nil {
		s.setNetwork(*req.Network)
	}
	netBefore := s.networkRecord()
	s.traceNetwork(ctx)
	_, span := tracing.Start(ctx, tracer, "session.run")
	oc, meter := s.exec(ctx, req.Code, req.Timeout, m.opts.KillGrace, m.opts.Output, req.Observe)
	span.End()
	_, span = tracing.Start(ctx, tracer, "artifacts")
	res := withChanges(s.ws.NoteDiskFull(m.result(s, oc, req.Timeout, id)), before, s.snaps.take(ws))
	span.End()
	res.Network = s.runAudit(netBefore)
	res.Usage = runreport.Session(res.Diff.Bytes, res.Network)
	if meter.ok {
		res.Usage = runreport.Between(res.Usage, meter.before, meter.after)
	}
	if s.hostNetwork() && !s.networkPolicy().None() {
		res.NetworkMode = engine.NetworkHost
	}
	if r := s.ck.TakeResumed(); r != nil {
		res.Resumed = r
	}
	if oc.Lost {
		m.lose(s, oc)
	} else if m.checkpoints() {
		m.ck.Schedule((*live)(s))
	}
	res.TraceID = tracing.TraceID(ctx)
	_, span = tracing.Start(ctx, tracer, "execlog.write")
	res.LogError = m.logExec(s, req, res, started)
	span.End()
	return res, nil
}

// tracer records a session call's spans: waiting for the session, the run
// in its interpreter, artifacts and the log write.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/session")

// lockLive returns ctx's principal's session idOrName with its execMu
// held, resuming it when paused, also when it was paused while this call
// waited for its turn.
func (m *Manager) lockLive(ctx context.Context, idOrName string) (*Session, error) {
	for {
		s, err := m.Get(ctx, idOrName)
		if err != nil {
			return nil, err
		}
		s.execMu.Lock()
		if m.registered(s) {
			return s, nil
		}
		s.execMu.Unlock()
		if _, p, err := m.lookup(ctx, idOrName); err != nil || p == nil {
			return nil, errcode.New(errcode.InvalidParams, "session %s was closed", s.ID)
		}
	}
}

// result maps the outcome of execution id onto the execute_code result
// shape.
func (m *Manager) result(s *Session, oc driver.Outcome, timeout time.Duration, id string) engine.Result {
	sid := s.ID
	res := engine.Result{ExecutionID: id, SessionID: &sid, Language: s.Language,
		Stdout: oc.Stdout, Stderr: oc.Stderr, Truncated: oc.Truncated, DurationMs: oc.Duration.Milliseconds(),
		ExecutionTime: engine.Seconds(oc.Duration), SandboxMode: m.opts.SandboxMode, Artifacts: []string{}, WorkingDir: s.Workspace,
		Limits: s.enforced()}
	res = engine.Ended(res, runreport.Facts{TimedOut: oc.TimedOut, Cancelled: oc.Cancelled, Lost: oc.Lost, Signal: interruptSignal(oc)})
	msg := ""
	switch {
	case oc.TimedOut && !oc.Lost:
		res.Status, res.TimedOut = engine.StatusTimeout, true
		msg = fmt.Sprintf("Execution timed out after %v; the running code was interrupted and the session's state is preserved.", timeout)
	case oc.TimedOut:
		res.Status, res.TimedOut = engine.StatusTimeout, true
		msg = fmt.Sprintf("Execution timed out after %v and %s: %s", timeout, oc.LostWhy, m.lostState(s))
	case oc.Cancelled && !oc.Lost:
		res.Status = engine.StatusCancelled
		msg = "Execution cancelled by the client; the running code was interrupted and the session's state is preserved."
	case oc.Cancelled:
		res.Status = engine.StatusCancelled
		msg = "Execution cancelled by the client and " + oc.LostWhy + ": " + m.lostState(s)
	case oc.Lost:
		res.Status = engine.StatusExecutionError
		msg = "The session's interpreter died: " + oc.LostWhy + ". " + upperFirst(m.lostState(s))
	case oc.Interrupted:
		res.Status, msg = engine.StatusExecutionError, "Execution was interrupted."
	case !oc.Reply.OK:
		one := 1
		res.ExitCode, res.Status, msg = &one, engine.StatusExecutionError, firstLine(oc.Reply.Error)
	default:
		zero := 0
		res.ExitCode, res.Status, res.Success = &zero, engine.StatusSuccess, true
		return res
	}
	res.ErrorMessage = &msg
	return res
}

// interruptSignal is the signal that ended a session run which the
// interpreter reports as interrupted (SIGINT), 0 otherwise.
func interruptSignal(oc driver.Outcome) int {
	if oc.Interrupted {
		return int(syscall.SIGINT)
	}
	return 0
}

// lostState says what became of a session whose interpreter is gone: with
// a checkpoint, it is paused there (lose).
func (m *Manager) lostState(s *Session) string {
	if rec := s.ck.Current(); rec != nil && m.checkpoints() {
		return fmt.Sprintf("its state since its checkpoint of %.0f s ago is lost; its next call resumes it from that checkpoint.", sessionckpt.AgeS(rec.TakenAt))
	}
	return "the session's state is lost and the session is closed; start a new one."
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// lose removes a session whose state is gone, or, when it has a
// checkpoint, pauses it there.
func (m *Manager) lose(s *Session, oc driver.Outcome) {
	if m.checkpoints() && m.ck.Lose((*live)(s), oc.LostWhy) {
		return
	}
	m.drop(s.key())
	m.terminate(s)
	if m.checkpoints() {
		m.ck.Discard((*live)(s))
	}
	m.logEnd(s, "lost: "+oc.LostWhy)
}

func firstLine(tb string) string {
	lines := splitLines(tb)
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] != "" {
			return lines[i]
		}
	}
	return "the code raised an error"
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// logExec appends the execution to the session's log and returns "" or,
// when it could not be written, why (for the result's log_error).
func (m *Manager) logExec(s *Session, req ExecRequest, res engine.Result, started time.Time) string {
	log := m.deps.Log
	if log == nil {
		return ""
	}
	sid := s.ID
	e := execlog.Entry{ExecutionID: res.ExecutionID, SessionID: &sid, Tool: req.Tool, Language: s.Language, Code: req.Code,
		Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode, Status: res.Status, TimedOut: res.TimedOut,
		Truncated: res.Truncated, DurationMs: res.DurationMs, SandboxMode: res.SandboxMode, WorkingDir: s.Workspace,
		Artifacts: res.Diff, Context: req.Call, ExecutedAt: started.UTC(), Owner: s.Owner, NetworkMode: res.NetworkMode, Limits: res.Limits,
		EndReason: res.EndReason, Usage: res.Usage}
	e.Network, e.TraceID = res.Network, res.TraceID
	if res.ErrorMessage != nil {
		e.ErrorMessage = *res.ErrorMessage
	}
	if err := log.AppendExecution(e); err != nil {
		slog.Error("session log write failed", "session_id", s.ID, "err", err)
		return err.Error()
	}
	m.deps.Journal.RunEnded(res.ExecutionID, execlog.SessionFile(s.storage))
	return ""
}

// logStarted writes the started record of execution id in s to the
// in-flight journal, so that a server killed while it runs has it logged as
// lost (in the session's log) at the next start. The session's log gets the
// execution's one entry when it ends.
func (m *Manager) logStarted(ctx context.Context, s *Session, req ExecRequest, id string, at time.Time) {
	defer engine.Started(ctx, id) // once recorded: a background send's call returns now
	log := m.deps.Log
	if log == nil {
		return
	}
	sid := s.ID
	st := execlog.Started{ExecutionID: id, SessionID: &sid, Tool: req.Tool, Language: s.Language, Code: req.Code,
		SandboxMode: m.opts.SandboxMode, WorkingDir: s.Workspace, Context: req.Call, ExecutedAt: at.UTC(), Owner: s.Owner,
		Background: engine.Background(ctx)}
	m.deps.Journal.RunStarted(id, execlog.SessionFile(s.storage), st)
}

type startEntry struct {
	Type        string    `json:"type"`
	SessionID   string    `json:"session_id"`
	Owner       string    `json:"owner"`
	Kind        string    `json:"kind"`
	Language    string    `json:"language"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Pid         int       `json:"pid"`
	AgentID     string    `json:"agent_id,omitempty"`
	WorkingDir  string    `json:"working_dir"`
	SandboxMode string    `json:"sandbox_mode"`
	StartedAt   time.Time `json:"started_at"`
}

type endEntry struct {
	Type            string    `json:"type"`
	SessionID       string    `json:"session_id"`
	Owner           string    `json:"owner"`
	Reason          string    `json:"reason"`
	TotalDurationMs int64     `json:"total_duration_ms"`
	ExecutionsCount int       `json:"executions_count"`
	At              time.Time `json:"at"`
}

func (m *Manager) logStart(s *Session, call execlog.CallContext) {
	if log := m.deps.Log; log != nil {
		m.deps.Journal.SessionStarted(inflight.Session{ID: s.ID, Owner: s.Owner, LogFile: execlog.SessionFile(s.storage), StartedAt: s.StartedAt})
		_ = log.Append(execlog.SessionFile(s.storage), startEntry{Type: "session_start", SessionID: s.ID, Owner: s.Owner, Kind: s.Kind,
			Language: s.Language, Name: s.Name, Description: s.Description, Pid: s.drv.Pid(), AgentID: call.AgentID,
			WorkingDir: s.Workspace, SandboxMode: m.opts.SandboxMode, StartedAt: s.StartedAt})
	}
}

// logEnd writes the session's one session_end entry.
func (m *Manager) logEnd(s *Session, reason string) {
	s.mu.Lock()
	already := s.ended
	s.ended = true
	s.mu.Unlock()
	if already {
		return
	}
	info := s.info()
	if log := m.deps.Log; log != nil {
		_ = log.Append(execlog.SessionFile(s.storage), endEntry{Type: "session_end", SessionID: s.ID, Owner: s.Owner, Reason: reason,
			TotalDurationMs: time.Since(s.StartedAt).Milliseconds(), ExecutionsCount: info.Executions, At: time.Now().UTC()})
		m.deps.Journal.SessionEnded(execlog.SessionFile(s.storage))
	}
}

// ReasonServerRestart is the session_end reason of a session whose server
// was killed, logged when the next server starts.
const ReasonServerRestart = "server_restart"

// EndLeftover logs the session_end of a session a killed server left live
// (from its in-flight journal): reason server_restart, the time since the
// session started as its duration (when the server died is not known),
// and lost more executions (those logged as lost) in its count.
func EndLeftover(log *execlog.Logger, s inflight.Session, lost int) error {
	return log.Append(s.LogFile, endEntry{Type: "session_end", SessionID: s.ID, Owner: s.Owner, Reason: ReasonServerRestart,
		TotalDurationMs: time.Since(s.StartedAt).Milliseconds(), ExecutionsCount: s.Executions + lost, At: time.Now().UTC()})
}
