package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/session"
)

// A handler reports a failed call in one way: it returns a non-nil error,
// and the SDK turns it into the call's result with isError set and the
// error's text as content. What the client reads depends on the error,
// never on the handler:
//
//   - Coded: the JSON object {"error": …, "code": …}, the form the
//     context, script, log and package tools document, so an agent can
//     branch on the code;
//   - Refused (Invalid, for handlers of tools that return
//     execute_code's shape: execute_code, send_to_session, run_script):
//     "error: " and the message, the line such a result's text shows for a
//     run that failed; it also gets that shape as structured content, with
//     status setup_error (Add, setupError), so readers of status and
//     readers of isError both see that nothing ran. The quota refusal of
//     every execution tool (tenancy) reads the same;
//   - any other error: its message.
//
// A handler never builds an isError result itself for a failure; the
// results that set isError on their own report a run that happened (a
// command that timed out, a code-mode program that threw).

// toolError is a tool failure made by Coded or Refused.
type toolError struct {
	Message string `json:"error"`
	Code    string `json:"code,omitempty"`
	// refused: the call was rejected before anything ran.
	refused bool
}

func (e *toolError) Error() string {
	if e.Code != "" {
		b, _ := json.Marshal(e)
		return string(b)
	}
	if e.refused {
		return "error: " + e.Message
	}
	return e.Message
}

// Coded returns a tool error carrying code (an UPPER_SNAKE name such
// as CONTEXT_NOT_FOUND).
func Coded(code, format string, args ...any) error {
	return &toolError{Message: fmt.Sprintf(format, args...), Code: code}
}

// Refused returns the tool error of a call of an execution tool
// rejected before anything ran (bad arguments, unknown session, no slot).
func Refused(msg string) error {
	return &toolError{Message: msg, refused: true}
}

// Invalid is Refused for the handlers of tools that return
// execute_code's shape.
func Invalid(msg string) (*mcp.CallToolResult, engine.Result, error) {
	return nil, engine.Result{}, Refused(msg)
}

// setupError reports whether err is a refusal and out a tool result of
// execute_code's shape; then it fills out with status setup_error and err's
// message.
func setupError(err error, out any) bool {
	var te *toolError
	r, ok := out.(*engine.Result)
	if !ok || !errors.As(err, &te) || !te.refused {
		return false
	}
	msg := te.Message
	*r = engine.Result{Status: engine.StatusSetupError, ErrorMessage: &msg, Artifacts: []string{}}
	return true
}

// ErrorResult is the isError result of err, as the SDK makes it for a
// handler's error.
func ErrorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// SessionError is how every tool names a session it cannot use: an
// unknown id gets the hint where the live ones are listed.
func SessionError(err error) string {
	if errors.Is(err, session.ErrNotFound) {
		return "unknown session: " + strings.TrimPrefix(err.Error(), session.ErrNotFound.Error()+": ") + " (list_sessions shows the live ones)"
	}
	return err.Error()
}
