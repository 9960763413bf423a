package session

import (
	"context"
	"regexp"

	"github.com/codexec/codexec/internal/errcode"
)

// Caller-chosen ids: execute_code's session_id names a session the
// caller made up ("user123_project_alpha"); the first call with an unknown id
// creates it. The id becomes a directory and log file name, so it is held to
// a charset that cannot escape or hide in the sandbox directory.

// MaxIDLen is the longest caller-chosen session id.
const MaxIDLen = 64

var callerIDRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// ErrExists is returned when a caller-chosen id is already in use.
var ErrExists = errcode.New(errcode.InvalidParams, "already exists")

// ValidateID checks a caller-chosen session id: 1–64 characters, letters,
// digits, '_', '-' and '.', starting with a letter or digit.
func ValidateID(id string) error {
	if len(id) > MaxIDLen || !callerIDRe.MatchString(id) {
		return errcode.New(errcode.InvalidParams, "invalid session_id %q: use 1-%d letters, digits, _ - . starting with a letter or digit", id, MaxIDLen)
	}
	return nil
}

// Open returns the session idOrName names, creating it with req (req.ID set
// to idOrName) when none exists. created reports which happened. Creation
// validates the id and counts against the session limit like Start; creations
// through Open are serialized so two first calls with one id make one
// session.
func (m *Manager) Open(ctx context.Context, idOrName string, req StartRequest) (s *Session, created bool, err error) {
	if s, err := m.Get(ctx, idOrName); err == nil {
		return s, false, nil
	}
	if err := ValidateID(idOrName); err != nil {
		return nil, false, err
	}
	m.openMu.Lock()
	defer m.openMu.Unlock()
	if s, err := m.Get(ctx, idOrName); err == nil { // created while we waited
		return s, false, nil
	}
	req.ID = idOrName
	if _, err := m.Start(ctx, req); err != nil {
		return nil, false, err
	}
	s, err = m.Get(ctx, idOrName)
	return s, err == nil, err
}
