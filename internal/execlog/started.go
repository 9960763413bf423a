package execlog

import "time"

// StatusLost is the status of an execution the server never saw end: it was
// killed (or crashed) while the run was in flight. The next server start
// logs such runs from their started records (Lost); their output and exit
// status are unknown.
const StatusLost = "lost"

// Started is what is known of an execution before it runs: the record the
// in-flight journal keeps for it (package inflight) until its execution
// entry is written. It never goes to the history files, which hold one
// entry per execution, written when it ends (or, for a run a killed server
// never finished, by Lost at the next start). Files written by older
// versions may still hold records of type "started" before an execution's
// entry; every reader skips them.
type Started struct {
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

// Lost is the execution entry of a run that started as s and never ended:
// status lost, no exit code or output, and why.
func Lost(s Started) Entry {
	return Entry{ExecutionID: s.ExecutionID, SessionID: s.SessionID, Tool: s.Tool, Language: s.Language,
		Code: s.Code, Args: s.Args, ScriptName: s.ScriptName, Stdin: s.Stdin, Status: StatusLost,
		ErrorMessage: "The server stopped (killed or crashed) while this ran; its output and exit status are unknown.",
		SandboxMode:  s.SandboxMode, WorkingDir: s.WorkingDir, Context: s.Context, Intent: s.Intent,
		ExecutedAt: s.ExecutedAt, Owner: s.Owner, Background: s.Background,
		EndReason: StatusLost} // the end reason of a lost run has the status's name
}
