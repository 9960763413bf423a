package sessiontools

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
)

// Statuses of sessions listed from the registry rather than by the replica
// holding them.
const (
	// StatusLost: its replica stopped; its state is gone.
	StatusLost = "lost"
	// StatusUnreachable: its replica did not answer the listing in time.
	StatusUnreachable = "unreachable"
)

// Peers are the other replicas sharing the session registry, as the
// listings see them (implemented by mcpserver).
type Peers interface {
	// Elsewhere returns the caller's sessions held by other replicas (for
	// tool list_runs: background runs instead): the answer of each live
	// replica holding one to the listing tool, called there with args
	// (nil: none), and the entries known only from the registry (lost,
	// paused, or held by a replica that did not answer in time).
	// A request another replica forwarded here gets Here alone: it lists
	// this replica only. An error is the registry's.
	Elsewhere(ctx context.Context, tool string, args map[string]any) (Remote, error)
}

// Remote is what Peers.Elsewhere found.
type Remote struct {
	Here     string            // this replica's id
	Answers  []json.RawMessage // each replica's listing (structured content)
	Unlisted []Unlisted
}

// Unlisted is a session known from the registry alone.
type Unlisted struct {
	// Record is the registry's record, SessionID as the caller named it.
	Record                   sessionreg.Owner
	ID, Kind, Language, Name string
	StartedAt                time.Time // when it was claimed, just before it started
	Replica                  string
	LostAt                   *time.Time // set when lost
	Note                     string     // why it is unreachable
	// Paused: no replica holds it; its checkpoint is in the shared store
	// and its next use resumes it on the replica the call reaches.
	Paused bool
}

func (u Unlisted) status() string {
	if u.LostAt != nil {
		return StatusLost
	}
	if u.Paused {
		return sessionckpt.StatusPaused
	}
	return StatusUnreachable
}

// remoteSessions adds to list_sessions' local entries the caller's
// sessions other replicas hold, and sorts them all, newest first.
func (s *toolset) remoteSessions(ctx context.Context, local []SessionInfo) ([]SessionInfo, error) {
	rem, err := s.deps.Peers.Elsewhere(ctx, "list_sessions", nil)
	if err != nil {
		return nil, tool.Coded(tool.CodeInternal, "the session registry could not list your sessions on other replicas: %v", err)
	}
	out := Merge(rem, local, func(e *SessionInfo) (string, *string) { return e.SessionID, &e.Replica },
		func(a json.RawMessage) []SessionInfo {
			var l ListSessionsOut
			if json.Unmarshal(a, &l) != nil {
				return nil
			}
			return l.Sessions
		},
		func(u Unlisted) (SessionInfo, bool) {
			return SessionInfo{SessionID: u.ID, Kind: u.Kind, Status: u.status(), Language: u.Language, Name: u.Name,
				StartedAt: u.StartedAt, PackagesInstalled: []string{}, Replica: u.Replica, LostAt: u.LostAt, Note: u.Note}, true
		})
	slices.SortFunc(out, func(a, b SessionInfo) int { return newestFirst(a.StartedAt, b.StartedAt, a.SessionID, b.SessionID) })
	return out, nil
}

// remoteContexts is remoteSessions for list_contexts.
func (s *toolset) remoteContexts(ctx context.Context, local []ContextOut) ([]ContextOut, error) {
	rem, err := s.deps.Peers.Elsewhere(ctx, "list_contexts", nil)
	if err != nil {
		return nil, tool.Coded(tool.CodeInternal, "the session registry could not list your contexts on other replicas: %v", err)
	}
	out := Merge(rem, local, func(e *ContextOut) (string, *string) { return e.ContextID, &e.Replica },
		func(a json.RawMessage) []ContextOut {
			var l ListContextsOut
			if json.Unmarshal(a, &l) != nil {
				return nil
			}
			return l.Contexts
		},
		func(u Unlisted) (ContextOut, bool) {
			return ContextOut{ContextID: u.ID, Name: u.Name, Language: contextLanguage(u.Language), CreatedAt: u.StartedAt, Status: u.status(),
				Message: u.Note, Replica: u.Replica, LostAt: u.LostAt}, true
		})
	slices.SortFunc(out, func(a, b ContextOut) int { return newestFirst(a.CreatedAt, b.CreatedAt, a.ContextID, b.ContextID) })
	return out, nil
}

// Merge is one listing across replicas: local, each entry marked as this
// replica's, then the entries of the other replicas' answers (decode
// reads one; a malformed answer gives none), then those fromRegistry
// makes of the registry's unlisted entries (false: leave it out), each id
// once, the first seen. key gives an entry's id and its replica field.
// local's backing array may be reused.
func Merge[T any](rem Remote, local []T, key func(*T) (string, *string),
	decode func(json.RawMessage) []T, fromRegistry func(Unlisted) (T, bool)) []T {
	out, seen := local, map[string]bool{}
	for i := range out {
		id, replica := key(&out[i])
		*replica, seen[id] = rem.Here, true
	}
	add := func(e T) {
		if id, _ := key(&e); !seen[id] {
			seen[id] = true
			out = append(out, e)
		}
	}
	for _, a := range rem.Answers {
		for _, e := range decode(a) {
			add(e)
		}
	}
	for _, u := range rem.Unlisted {
		if e, ok := fromRegistry(u); ok {
			add(e)
		}
	}
	return out
}

// newestFirst orders listing entries by start time, newest first, then by
// id, so a merged listing has one order whichever replica made it.
func newestFirst(ta, tb time.Time, ida, idb string) int {
	if c := tb.Compare(ta); c != 0 {
		return c
	}
	return cmp.Compare(ida, idb)
}
