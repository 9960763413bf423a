package sessionckpt

import (
	"context"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/sessionreg"
)

// Key names a session: its id within its owner's (principal's) namespace.
type Key struct{ Owner, ID string }

// RecordKey is the key of the session rec is the checkpoint of.
func RecordKey(rec checkpoint.Record) Key { return Key{rec.Owner, rec.ID} }

// Facts are what a checkpoint record keeps about a session, read at one
// instant. Packages are the names of the packages installed into it,
// sorted; Storage names it on disk and in its log.
type Facts struct {
	ID, Owner, Kind, Language, Name, Description string
	// WorkingDir is the caller's working_dir ("": codexec's own
	// workspace); Workspace the workspace's path.
	WorkingDir, Workspace, Storage string
	StartedAt, LastActivity        time.Time
	Executions                     int
	Packages                       []string
	// Network is the session's network policy: a resumed session and
	// every fork of it get the same, never more.
	Network []egress.Rule
}

// Live is a live session as checkpoints reach it: its interpreter, its
// workspace and the lock its runs take. A Checkpointer holds Runs while it
// checkpoints or restores the session, so no code runs meanwhile. It is a
// type constraint (comparable: a pointer to the manager's session).
type Live interface {
	comparable
	// Facts is a snapshot of the session.
	Facts() Facts
	// Conn is the session's interpreter.
	Conn() *driver.Conn
	// Workdir is the session's workspace (with its bounded disk).
	Workdir() *engine.Workspace
	// Runs serialises the session's runs (and its checkpoints).
	Runs() *sync.Mutex
	// Checkpoints is the session's checkpoint state.
	Checkpoints() *State
}

// Host is the session manager as a Checkpointer uses it: its registry of
// live and paused sessions, the interpreters it starts, and the claims
// replicas share. Its methods are safe for concurrent use.
type Host[S Live] interface {
	Registry[S]
	Interpreters[S]
	Claims
}

// Registry is the manager's one registry of live and paused sessions.
// A key is live, paused or neither; the moves between them are atomic.
type Registry[S Live] interface {
	// Lookup finds ctx's principal's session idOrName: live (p nil) or
	// paused (p).
	Lookup(ctx context.Context, idOrName string) (s S, p *Paused[S], err error)
	// Registered reports whether s is still the live session of its key.
	Registered(s S) bool
	// Reserve holds a live slot for k (a resuming session's or a fork
	// child's) within the session limits; Drop gives it back.
	Reserve(k Key, kind string) error
	Drop(k Key)
	// Detach marks s's life ended (no session_end is logged for it) and,
	// when s is still the live session of its key, puts p (nil: nothing)
	// in its place; it reports whether s was.
	Detach(s S, p *Paused[S]) bool
	// Adopt makes s, restored into k's reserved slot, the live session
	// k with f's kind, name, description, start and executions, in place
	// of paused p (nil: none), and logs its start.
	Adopt(s S, f Facts, p *Paused[S])
	// Enlist makes p, read from records replicas share, the paused
	// session of its key here while it is resumed or closed. It returns
	// the session live here meanwhile (q nil), or the paused one to act on
	// (q). Unlist removes p when it is still the paused session of its key.
	Enlist(p *Paused[S]) (s S, q *Paused[S])
	Unlist(p *Paused[S])
}

// Interpreters start and stop session interpreters.
type Interpreters[S Live] interface {
	// Launch starts an interpreter named as session k in a new workspace
	// (the caller's workingDir when set) and waits until it is ready;
	// spare: one nobody owns yet, whose death is no session's.
	Launch(ctx context.Context, k Key, lang, workingDir string, spare bool) (S, error)
	// Rename makes spare s the interpreter of session k.
	Rename(s S, k Key)
	// Terminate stops s's interpreter and frees its directories.
	Terminate(s S)
}

// Claims is the registry replicas share, keyed by a session's id and, for a
// context, its name too. Without replicas Claim and Release do nothing;
// Pause and Standing are used only with Options.Shared.
type Claims interface {
	// Claim claims k for this replica; it fails when another holds it.
	Claim(ctx context.Context, k Key, lang, kind, name string) error
	// Release forgets k's claims; Pause marks them held by no replica.
	Release(k Key, kind, name string)
	Pause(k Key, kind, name string)
	// Standing is where k stands for this replica.
	Standing(ctx context.Context, k Key) (sessionreg.Standing, error)
}

// ruleStrings are rules as a checkpoint record keeps them.
func ruleStrings(rules []egress.Rule) []string {
	var out []string
	for _, r := range rules {
		out = append(out, r.String())
	}
	return out
}

// recordRules are the network rules rec keeps. A rule that no longer
// parses is dropped (less network, never more).
func recordRules(rec checkpoint.Record) []egress.Rule {
	var out []egress.Rule
	for _, s := range rec.Network {
		if r, err := egress.ParseRule(s); err == nil {
			out = append(out, r)
		}
	}
	return out
}
