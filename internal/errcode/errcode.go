// Package errcode is how a domain package says what kind of failure an
// error is, so the one layer that answers callers (the MCP tools) can pick
// the stable code a client branches on without knowing the domain: an error
// carries its code (Coder), found with errors.As through any wrapping. An
// error that carries none is the server's fault (Internal), never the
// caller's: a domain package codes every failure a caller can cause.
//
// The codes are stable strings: clients branch on them, so a code is never
// renamed or reused for another meaning. docs/errors.md lists each with its
// meaning (the table is checked against the MCP layer's list).
package errcode

import (
	"errors"
	"fmt"
)

// The codes.
const (
	InvalidParams         = "INVALID_PARAMS"
	InvalidLanguage       = "INVALID_LANGUAGE"
	InvalidContextName    = "INVALID_CONTEXT_NAME"
	NotAllowed            = "NOT_ALLOWED"
	NotEnabled            = "NOT_ENABLED"
	LimitExceeded         = "LIMIT_EXCEEDED"
	FileExists            = "FILE_EXISTS"
	PackageBlocked        = "PACKAGE_BLOCKED"
	MissingPackages       = "MISSING_PACKAGES"
	PreflightFailed       = "PREFLIGHT_FAILED"
	ContextNotFound       = "CONTEXT_NOT_FOUND"
	SessionNotFound       = "SESSION_NOT_FOUND"
	SessionLost           = "SESSION_LOST"
	ScriptNotFound        = "SCRIPT_NOT_FOUND"
	ExecutionNotFound     = "EXECUTION_NOT_FOUND"
	FileNotFound          = "FILE_NOT_FOUND"
	ToolNotFound          = "TOOL_NOT_FOUND"
	Busy                  = "BUSY"
	ServerNotReady        = "SERVER_NOT_READY"
	Internal              = "INTERNAL_ERROR"
	ContextCreationFailed = "CONTEXT_CREATION_FAILED"
	StopFailed            = "STOP_FAILED"
	ScriptStorage         = "SCRIPT_STORAGE_ERROR"
	LogUnavailable        = "LOG_UNAVAILABLE"
)

// Coder is an error that knows its code.
type Coder interface {
	error
	ErrorCode() string
}

// Error is an error with a code. Its message is the wrapped error's (or
// the formatted one's); errors.Is and errors.As see through it.
type Error struct {
	code string
	err  error
}

// New returns an error with code whose message is fmt.Errorf(format,
// args...)'s (%w wraps as usual).
func New(code, format string, args ...any) error {
	return &Error{code: code, err: fmt.Errorf(format, args...)}
}

// Wrap gives err a code, keeping its message and chain; nil stays nil.
func Wrap(code string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{code: code, err: err}
}

func (e *Error) Error() string     { return e.err.Error() }
func (e *Error) Unwrap() error     { return e.err }
func (e *Error) ErrorCode() string { return e.code }

// Of is the code of the outermost Coder in err's chain, or Internal when
// none carries one (and "" for a nil err).
func Of(err error) string {
	if err == nil {
		return ""
	}
	var c Coder
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return Internal
}
