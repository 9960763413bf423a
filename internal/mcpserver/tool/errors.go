package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
)

// Every failed call has one shape (docs/errors.md): isError true, the text
// content {"error": message, "code": CODE} (compact JSON), and the same
// object as structured content. A handler reports a failure by returning a
// non-nil error, never by building an isError result itself; Add renders
// it (errorResult). The results that set isError on their own report a run
// that happened (a command that timed out, a code-mode program that threw)
// and are not errors of this contract.
//
// Tools that return execute_code's result (execute_code, send_to_session,
// run_script) keep that shape for their failures: structured content is the
// result with status setup_error, error_message and code, so readers of
// status and readers of isError both see that nothing ran.

// Class is what kind of failure a code names; the client's next step
// depends on it (fix the arguments, ask for something else, wait, report).
type Class string

// The classes, in the order docs/errors.md lists them.
const (
	ClassInvalid  Class = "invalid arguments"
	ClassRefused  Class = "refused"
	ClassNotFound Class = "not found"
	ClassBusy     Class = "busy"
	ClassInternal Class = "internal"
)

// The error codes. Each is stable: clients branch on it, so a code is never
// renamed or reused for another meaning.
const (
	CodeInvalidParams         = "INVALID_PARAMS"
	CodeInvalidLanguage       = "INVALID_LANGUAGE"
	CodeInvalidContextName    = "INVALID_CONTEXT_NAME"
	CodeNotAllowed            = "NOT_ALLOWED"
	CodeNotEnabled            = "NOT_ENABLED"
	CodeLimitExceeded         = "LIMIT_EXCEEDED"
	CodeFileExists            = "FILE_EXISTS"
	CodePackageBlocked        = "PACKAGE_BLOCKED"
	CodeMissingPackages       = "MISSING_PACKAGES"
	CodePreflightFailed       = "PREFLIGHT_FAILED"
	CodeContextNotFound       = "CONTEXT_NOT_FOUND"
	CodeSessionNotFound       = "SESSION_NOT_FOUND"
	CodeSessionLost           = "SESSION_LOST"
	CodeScriptNotFound        = "SCRIPT_NOT_FOUND"
	CodeExecutionNotFound     = "EXECUTION_NOT_FOUND"
	CodeFileNotFound          = "FILE_NOT_FOUND"
	CodeToolNotFound          = "TOOL_NOT_FOUND"
	CodeBusy                  = "BUSY"
	CodeServerNotReady        = "SERVER_NOT_READY"
	CodeInternal              = "INTERNAL_ERROR"
	CodeContextCreationFailed = "CONTEXT_CREATION_FAILED"
	CodeStopFailed            = "STOP_FAILED"
	CodeScriptStorage         = "SCRIPT_STORAGE_ERROR"
	CodeLogUnavailable        = "LOG_UNAVAILABLE"
)

// CodeInfo describes one code for docs/errors.md.
type CodeInfo struct {
	Code, Meaning string
	Class         Class
}

// Codes lists every code a tool may return, with its class and meaning;
// docs/errors.md's table is checked against it.
var Codes = []CodeInfo{
	{CodeInvalidParams, "an argument is missing, has the wrong type or an unusable value; the message names it", ClassInvalid},
	{CodeInvalidLanguage, "the language is not one this tool runs or installs for", ClassInvalid},
	{CodeInvalidContextName, "the context name is empty, has special characters, or is taken", ClassInvalid},
	{CodeNotAllowed, "the server's policy forbids it: a command outside ALLOWED_COMMANDS, a cwd outside ALLOWED_CWD_ROOTS, a path leaving the workspace, an upstream tool denied, a global install by a non-operator", ClassRefused},
	{CodeNotEnabled, "the feature the call needs is not configured on this server (the message names the setting)", ClassRefused},
	{CodeLimitExceeded, "a size or count limit would be exceeded (upload, download range, disk, sessions, background runs)", ClassRefused},
	{CodeFileExists, "the file exists; pass overwrite: true to replace it", ClassRefused},
	{CodePackageBlocked, "the package is on the blocklist or not installable safely", ClassRefused},
	{CodeMissingPackages, "the script needs packages that are not installed (install_package)", ClassRefused},
	{CodePreflightFailed, "the script's package check could not run", ClassRefused},
	{CodeContextNotFound, "no live context has this id or name (list_contexts)", ClassNotFound},
	{CodeSessionNotFound, "no live session of yours has this id (list_sessions)", ClassNotFound},
	{CodeSessionLost, "the session or context was held by a replica that stopped; its state is gone (the message names the replica and when); start a new one (a background run of such a replica is not an error: get_run answers status lost)", ClassNotFound},
	{CodeScriptNotFound, "no saved script has this name or version (list_scripts)", ClassNotFound},
	{CodeExecutionNotFound, "no logged execution, background run or kept artifacts have this id (list_runs lists your runs)", ClassNotFound},
	{CodeFileNotFound, "no such file, upload or artifact (list_files)", ClassNotFound},
	{CodeToolNotFound, "no upstream tool matches the name (search_tools)", ClassNotFound},
	{CodeBusy, "all your execution slots stayed taken for the queue wait, or another replica is resuming the session at this moment; retry later", ClassBusy},
	{CodeServerNotReady, "the server is shutting down and takes no new calls; retry on another instance", ClassBusy},
	{CodeInternal, "the server failed; the message says what failed", ClassInternal},
	{CodeContextCreationFailed, "the context's interpreter could not be started", ClassInternal},
	{CodeStopFailed, "the context could not be stopped", ClassInternal},
	{CodeScriptStorage, "the script store could not be read or written", ClassInternal},
	{CodeLogUnavailable, "the execution log cannot be searched or read now", ClassInternal},
}

// Error is a tool failure: its JSON is the error object every failed call
// returns.
type Error struct {
	Message string `json:"error"`
	Code    string `json:"code"`
}

func (e *Error) Error() string { return e.Message }

// Coded returns a tool error carrying code, one of the Code constants.
func Coded(code, format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...), Code: code}
}

// Invalidf returns an INVALID_PARAMS error: the message names the argument
// and what to pass instead.
func Invalidf(format string, args ...any) error {
	return Coded(CodeInvalidParams, format, args...)
}

// Fail returns err, as Rejected codes it, from a handler of a tool that
// returns execute_code's shape.
func Fail(err error) (*mcp.CallToolResult, engine.Result, error) {
	return nil, engine.Result{}, Rejected(err)
}

// Rejected codes an error of a service that documents its errors as
// invalid requests (the engine, code mode, sessions' Exec, scripts): by
// the domain error it wraps (Classify), else INVALID_PARAMS.
func Rejected(err error) error {
	te := Classify(err)
	var own *Error
	cancelled := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if te.Code == CodeInternal && !errors.As(err, &own) && !cancelled {
		te.Code = CodeInvalidParams
	}
	return te
}

// Classify returns err as an *Error: itself when it is one, else coded by
// the domain error it wraps (unknown session, missing file, no slot, …),
// else INTERNAL_ERROR. Handlers classify their own argument errors with
// Invalidf; Classify names what the services below them report.
func Classify(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	code := CodeInternal
	var lost *sessionreg.LostError
	switch {
	case errors.As(err, &lost):
		code = CodeSessionLost
	case errors.Is(err, session.ErrNotFound):
		return &Error{Message: sessionError(err), Code: CodeSessionNotFound}
	case errors.Is(err, session.ErrFull), errors.Is(err, files.ErrTooLarge):
		code = CodeLimitExceeded
	case errors.Is(err, session.ErrExists):
		code = CodeInvalidParams
	case errors.Is(err, files.ErrNotFound):
		code = CodeFileNotFound
	case errors.Is(err, files.ErrExists):
		code = CodeFileExists
	case errors.Is(err, quota.ErrBusy), errors.Is(err, sessionckpt.ErrHeldElsewhere):
		// Held elsewhere: another replica resumed the session at the same
		// moment; a retry is forwarded there.
		code = CodeBusy
	}
	return &Error{Message: err.Error(), Code: code}
}

// errShape is how a tool's failures are rendered.
type errShape struct {
	execResult bool                 // the tool returns execute_code's result
	schema     *jsonschema.Resolved // its output schema, if any
}

// result is the isError result of te. The structured content is the error
// object (execute_code's result with status setup_error for execResult),
// left out when the tool's output schema would reject it: clients such as
// the official TypeScript SDK validate any structured content against the
// output schema, isError or not.
func (es errShape) result(te *Error) *mcp.CallToolResult {
	b, _ := json.Marshal(te)
	res := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
	sc := json.RawMessage(b)
	if es.execResult {
		sc = setupError(te)
	}
	if es.schema == nil || validJSON(es.schema, sc) == nil {
		res.StructuredContent = sc
	}
	return res
}

// setupError is execute_code's result for a call that ran nothing: status
// setup_error with the message, plus the code.
func setupError(te *Error) json.RawMessage {
	msg := te.Message
	b, _ := json.Marshal(struct {
		engine.Result
		Code string `json:"code"`
	}{engine.Result{Status: engine.StatusSetupError, ErrorMessage: &msg, Artifacts: []string{}}, te.Code})
	return b
}

// ErrorResult is the isError result of err as Add renders a handler's
// error, for the middleware that answers before any handler runs.
func ErrorResult(err error) *mcp.CallToolResult {
	return errShape{}.result(Classify(err))
}

// sessionError is how every tool names a session it cannot find, with the
// hint where the live ones are listed.
func sessionError(err error) string {
	if errors.Is(err, session.ErrNotFound) {
		return "unknown session: " + strings.TrimPrefix(err.Error(), session.ErrNotFound.Error()+": ") + " (list_sessions shows the live ones)"
	}
	return err.Error()
}
