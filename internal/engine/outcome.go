package engine

import (
	"context"
	"time"
)

// OutcomeResult maps a RunProcess outcome to a Result with the same status
// rules as Execute (success, execution_error, timeout, setup_error), for
// callers that run their own argv through RunProcess (the shell tools).
// lang names what ran in logs and results ("bash", "process").
func (e *Engine) OutcomeResult(id, lang string, oc Outcome, timeout time.Duration) Result {
	res := Result{ExecutionID: id, Language: lang, SandboxMode: e.backend.Name(), Artifacts: []string{}}
	return fillOutcome(res, oc, timeout, e.opts.Limits.MemoryBytes)
}

// LogResult appends res to the execution log as Execute does; req supplies
// the tool name, code (the command line), args, stdin and call context.
// Nothing is logged when the engine has no logger or req.NoLog is set. It
// returns "" or, when the entry could not be written, why (for the
// result's log_error).
func (e *Engine) LogResult(ctx context.Context, res Result, req Request, started time.Time) string {
	if req.NoLog {
		return ""
	}
	return e.logExecution(ctx, res, req, started)
}
