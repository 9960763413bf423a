package execlog

import "time"

// StatusLost is the status of an execution the server never saw end: it was
// killed (or crashed) while the run was in flight. The next server start
// logs such runs from their started records (Lost); their output and exit
// status are unknown.
const StatusLost = "lost"

// Started is the record written before a run starts (type "started"): what
// is known of the execution before it runs, in the file its execution entry
// will go to. A started record without an execution entry of the same id is
// a run in flight, or one a killed server never finished.
type Started struct {
	Type        string      `json:"type"`
	ExecutionID string      `json:"execution_id"`
	SessionID   *string     `json:"session_id"`
	Tool        string      `json:"tool,omitempty"`
	Language    string      `json:"language"`
	Code        string      `json:"code"`
	Args        []string    `json:"args,omitempty"`
	ScriptName  string      `json:"script_name,omitempty"`
	Stdin       *string     `json:"stdin"`
	SandboxMode string      `json:"sandbox_mode"`
	WorkingDir  string      `json:"working_dir"`
	Context     CallContext `json:"context"`
	Intent      string      `json:"intent,omitempty"`
	ExecutedAt  time.Time   `json:"executed_at"`
	Owner       string      `json:"owner,omitempty"`
	Background  bool        `json:"background,omitempty"`
}

// fileOf is the log file of an execution of sessionID at t (see
// AppendExecution).
func fileOf(sessionID *string, t time.Time) string {
	if sessionID != nil && *sessionID != "" {
		return SessionFile(*sessionID)
	}
	return DailyFile(t)
}

// AppendStarted writes s as a started record to the file its execution
// entry will go to.
func (l *Logger) AppendStarted(s Started) error {
	s.Type = "started"
	return l.Append(fileOf(s.SessionID, s.ExecutedAt), s)
}

// Lost is the execution entry of a run that started as s and never ended:
// status lost, no exit code or output, and why.
func Lost(s Started) Entry {
	return Entry{ExecutionID: s.ExecutionID, SessionID: s.SessionID, Tool: s.Tool, Language: s.Language,
		Code: s.Code, Args: s.Args, ScriptName: s.ScriptName, Stdin: s.Stdin, Status: StatusLost,
		ErrorMessage: "The server stopped (killed or crashed) while this ran; its output and exit status are unknown.",
		SandboxMode:  s.SandboxMode, WorkingDir: s.WorkingDir, Context: s.Context, Intent: s.Intent,
		ExecutedAt: s.ExecutedAt, Owner: s.Owner, Background: s.Background}
}
