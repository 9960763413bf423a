package tool

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/errcode"
)

// Every failed call has one shape (docs/errors.md): isError true, the text
// content {"error": message, "code": CODE} (compact JSON), and the same
// object as structured content. A handler reports a failure by returning a
// non-nil error, never by building an isError result itself; Add renders
// it (errorResult). The results that set isError on their own report a run
// that happened (a command that timed out, a code-mode program that threw)
// and are not errors of this contract.
//
// A tool whose result type says how its failures look (FailureShaper:
// execute_code's result, with status setup_error) keeps that shape for them.
//
// The code comes from the error: this package's own (Coded, Invalidf), or
// the one a domain package gave it (package errcode); an error that carries
// none is INTERNAL_ERROR, the server's failure, never the caller's. This
// package knows no domain package.

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

// The error codes (package errcode, under the names the toolsets use).
const (
	CodeInvalidParams         = errcode.InvalidParams
	CodeInvalidLanguage       = errcode.InvalidLanguage
	CodeInvalidContextName    = errcode.InvalidContextName
	CodeNotAllowed            = errcode.NotAllowed
	CodeNotEnabled            = errcode.NotEnabled
	CodeLimitExceeded         = errcode.LimitExceeded
	CodeFileExists            = errcode.FileExists
	CodePackageBlocked        = errcode.PackageBlocked
	CodeMissingPackages       = errcode.MissingPackages
	CodePreflightFailed       = errcode.PreflightFailed
	CodeContextNotFound       = errcode.ContextNotFound
	CodeSessionNotFound       = errcode.SessionNotFound
	CodeSessionLost           = errcode.SessionLost
	CodeScriptNotFound        = errcode.ScriptNotFound
	CodeExecutionNotFound     = errcode.ExecutionNotFound
	CodeFileNotFound          = errcode.FileNotFound
	CodeToolNotFound          = errcode.ToolNotFound
	CodeBusy                  = errcode.Busy
	CodeServerNotReady        = errcode.ServerNotReady
	CodeInternal              = errcode.Internal
	CodeContextCreationFailed = errcode.ContextCreationFailed
	CodeStopFailed            = errcode.StopFailed
	CodeScriptStorage         = errcode.ScriptStorage
	CodeLogUnavailable        = errcode.LogUnavailable
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
	{CodeNotAllowed, "the server's policy forbids it: a command outside ALLOWED_COMMANDS, a cwd outside ALLOWED_CWD_ROOTS, a path leaving the workspace, an upstream tool denied, a global install by a non-operator, a call a person did not approve (declined, unanswered, or no way to ask: approval.md)", ClassRefused},
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

// ErrorCode makes an *Error an errcode.Coder.
func (e *Error) ErrorCode() string { return e.Code }

// Coded returns a tool error carrying code, one of the Code constants.
func Coded(code, format string, args ...any) error {
	return &Error{Message: fmt.Sprintf(format, args...), Code: code}
}

// Invalidf returns an INVALID_PARAMS error: the message names the argument
// and what to pass instead.
func Invalidf(format string, args ...any) error {
	return Coded(CodeInvalidParams, format, args...)
}

// Classify returns err as an *Error: itself when it is one, else with the
// code the error carries (errcode), else INTERNAL_ERROR.
func Classify(err error) *Error {
	var te *Error
	if errors.As(err, &te) {
		return te
	}
	return &Error{Message: err.Error(), Code: errcode.Of(err)}
}

// FailureShaper is implemented by a result type whose tools report a
// failure in that type's shape instead of the error object: execute_code's
// result with status setup_error, error_message and code.
type FailureShaper interface {
	FailureShape(message, code string) any
}

// errShape is how a tool's failures are rendered.
type errShape struct {
	shaper FailureShaper        // the tool's result type, if it shapes failures
	schema *jsonschema.Resolved // its output schema, if any
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
	if es.shaper != nil {
		sc, _ = json.Marshal(es.shaper.FailureShape(te.Message, te.Code))
	}
	if es.schema == nil || validJSON(es.schema, sc) == nil {
		res.StructuredContent = sc
	}
	return res
}

// ErrorResult is the isError result of err as Add renders a handler's
// error, for the middleware that answers before any handler runs.
func ErrorResult(err error) *mcp.CallToolResult {
	return errShape{}.result(Classify(err))
}
