package execlog

import "time"

// Approval is one decision of the approval gate (type "approval"), in the
// daily file beside the executions: who asked, which tool, what it would
// have run, when, and how it ended (approved, declined, cancelled,
// timed_out, refused). An approved call's run has its own execution
// entry; a refused one ran nothing and has only this one. The search
// index skips these lines (it indexes executions), so searches of
// executions are unchanged; the JSONL keeps them for audit.
type Approval struct {
	Type    string    `json:"type"`
	At      time.Time `json:"at"`
	Owner   string    `json:"owner,omitempty"`
	Tool    string    `json:"tool"`
	Summary string    `json:"summary"`
	// Decision is the outcome (package approval's Outcome values).
	Decision string `json:"decision"`
	// Reasons say why the call was asked about; Detail why it ended so
	// when it was not approved.
	Reasons []string    `json:"reasons,omitempty"`
	Detail  string      `json:"detail,omitempty"`
	Context CallContext `json:"context"`
}

// AppendApproval writes a to the daily file of its time.
func (l *Logger) AppendApproval(a Approval) error {
	a.Type = "approval"
	return l.Append(DailyFile(a.At), a)
}
