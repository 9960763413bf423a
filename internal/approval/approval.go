// Package approval is codexec's approval gate: which calls a person must
// approve before they run (a Policy: the operator's mode and rules), the
// question put to that person (the form an MCP client shows through
// elicitation), the reading of the answer, and the signed request state
// that carries a question across the two rounds of a multi round-trip
// call (a State signer). It knows no MCP server: mcpserver asks it and
// serves the questions.
//
// Safe by default: anything the gate cannot establish (a state that does
// not verify, an answer that is not a clear approval, a client that cannot
// ask its user) is a refusal, and a refused call runs nothing. Every
// refusal is a *Refusal carrying the code NOT_ALLOWED and an Outcome that
// the execution log records.
package approval

import (
	"fmt"
	"strings"

	"github.com/codexec/codexec/internal/errcode"
)

// Mode is CODEXEC_APPROVAL: which calls need a person's approval.
type Mode string

// The modes.
const (
	// Off asks nobody (the default).
	Off Mode = "off"
	// Risky asks for the calls the operator's rules call risky.
	Risky Mode = "risky"
	// Always asks for every call that runs code or a program.
	Always Mode = "always"
)

// ParseMode reads a CODEXEC_APPROVAL value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.TrimSpace(s)); m {
	case Off, Risky, Always:
		return m, nil
	case "":
		return Off, nil
	default:
		return "", fmt.Errorf("must be off, risky or always, got %q", s)
	}
}

// Outcome is how one decision ended, as the execution log records it.
type Outcome string

// The outcomes.
const (
	// Approved: the person approved; the call runs.
	Approved Outcome = "approved"
	// Declined: the person declined (or submitted the form unticked).
	Declined Outcome = "declined"
	// Cancelled: the person dismissed the question without choosing.
	Cancelled Outcome = "cancelled"
	// TimedOut: no answer came within the approval timeout.
	TimedOut Outcome = "timed_out"
	// Refused: the gate could not ask or could not trust the answer (a
	// client without elicitation, a forged, replayed, expired-by-tampering
	// or mismatched request state).
	Refused Outcome = "refused"
)

// Refusal is why a call that needed approval does not run. It carries the
// code NOT_ALLOWED: the call was well formed, a person (or the lack of
// one) said no.
type Refusal struct {
	Outcome Outcome
	// Msg says what happened, why, and what to do, to the caller.
	Msg string
}

func (r *Refusal) Error() string     { return r.Msg }
func (r *Refusal) ErrorCode() string { return errcode.NotAllowed }

// Refuse returns a *Refusal with outcome o and the formatted message.
func Refuse(o Outcome, format string, args ...any) *Refusal {
	return refusal(o, format, args...)
}

func refusal(o Outcome, format string, args ...any) *Refusal {
	return &Refusal{Outcome: o, Msg: fmt.Sprintf(format, args...)}
}
