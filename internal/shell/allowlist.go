// Package shell implements the command tools (execute_command,
// execute_process) in domain terms: the
// ALLOWED_COMMANDS allowlist (with a static check of every command of a shell
// script), ALLOWED_CWD_ROOTS containment of working directories, and a Runner
// that runs checked commands through the engine's shared runner
// (engine.RunProcess), so they get the same sandbox backend, stripped
// environment, timeouts, output truncation and execution log as code.
//
// It does not import the MCP SDK. Allowlist, Roots and Runner are immutable
// after construction and safe for concurrent use.
package shell

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/errcode"
)

// ErrNoneAllowed is returned for every command when ALLOWED_COMMANDS is unset
// or empty; its text tells the operator how to allow commands.
var ErrNoneAllowed = errcode.New(errcode.NotAllowed, "no commands are allowed: ALLOWED_COMMANDS is not set. "+
	"The server operator must set ALLOWED_COMMANDS to a comma-separated list of command names "+
	"(e.g. ALLOWED_COMMANDS=ls,cat) or to * to allow every command")

// NotAllowedError names a command that is not on the allowlist.
type NotAllowedError struct {
	Name    string
	Allowed []string
}

// ErrorCode: the allowlist is the server's policy.
func (e *NotAllowedError) ErrorCode() string { return errcode.NotAllowed }

func (e *NotAllowedError) Error() string {
	return fmt.Sprintf("command %q is not allowed (ALLOWED_COMMANDS=%s)", e.Name, strings.Join(e.Allowed, ","))
}

// UncheckableError reports shell code whose commands cannot be determined
// statically, so it is rejected rather than trusted.
type UncheckableError struct {
	What, Why string
}

// ErrorCode: a command the allowlist cannot check is refused by policy.
func (e *UncheckableError) ErrorCode() string { return errcode.NotAllowed }

func (e *UncheckableError) Error() string {
	return fmt.Sprintf("rejected %s: %s (only commands that can be checked against ALLOWED_COMMANDS before running are executed)", e.What, e.Why)
}

// Allowlist is the parsed ALLOWED_COMMANDS.
//
// Matching rules: an entry without a slash allows that bare command name,
// resolved through PATH at run time, and the same program called by an
// absolute path whose directory is one of the PATH directories (/usr/bin/ls
// when PATH contains /usr/bin and "ls" is allowed). An entry with a slash
// allows exactly that (cleaned, absolute) path. Relative paths with a slash
// (./ls, bin/ls) are never allowed: they depend on the directory at the time
// they run, which a script can change with cd. "*" allows everything and
// disables the script check (bash still reports syntax errors).
//
// The zero value allows nothing.
type Allowlist struct {
	all      bool
	names    map[string]bool
	paths    map[string]bool
	entries  []string
	pathDirs []string
}

// NewAllowlist builds an allowlist from ALLOWED_COMMANDS entries. pathEnv is
// the PATH the commands run with (used to accept absolute spellings of allowed
// names).
func NewAllowlist(entries []string, pathEnv string) *Allowlist {
	a := &Allowlist{names: map[string]bool{}, paths: map[string]bool{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			continue
		case e == "*":
			a.all = true
		case strings.Contains(e, "/"):
			a.paths[filepath.Clean(e)] = true
		default:
			a.names[e] = true
		}
		a.entries = append(a.entries, e)
	}
	for _, d := range filepath.SplitList(pathEnv) {
		if filepath.IsAbs(d) {
			a.pathDirs = append(a.pathDirs, filepath.Clean(d))
		}
	}
	return a
}

// Empty reports whether nothing is allowed.
func (a *Allowlist) Empty() bool { return a == nil || len(a.entries) == 0 }

// All reports whether every command is allowed ("*").
func (a *Allowlist) All() bool { return a != nil && a.all }

// Entries returns the configured entries (for messages and tool descriptions).
func (a *Allowlist) Entries() []string {
	if a == nil {
		return nil
	}
	return slices.Clone(a.entries)
}

// Allowed returns nil if the command name may be run, ErrNoneAllowed when the
// list is empty, and a *NotAllowedError (or *UncheckableError for relative
// paths) otherwise.
func (a *Allowlist) Allowed(name string) error {
	if a.Empty() {
		return ErrNoneAllowed
	}
	if a.all {
		return nil
	}
	if !strings.Contains(name, "/") {
		if a.names[name] {
			return nil
		}
		return &NotAllowedError{Name: name, Allowed: a.entries}
	}
	if !filepath.IsAbs(name) {
		return &UncheckableError{What: fmt.Sprintf("command %q", name), Why: "a relative path depends on the directory at run time; use the bare command name or an absolute path"}
	}
	clean := filepath.Clean(name)
	if a.paths[clean] || (a.names[filepath.Base(clean)] && slices.Contains(a.pathDirs, filepath.Dir(clean))) {
		return nil
	}
	return &NotAllowedError{Name: name, Allowed: a.entries}
}
