package runtools

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runs"
)

// remoteRuns adds to list_runs' local entries the caller's runs on the
// other replicas, as list_sessions does for sessions: each live replica's
// own list_runs (same status and limit), and from the registry the runs of
// replicas that stopped or did not answer. It returns them all, newest
// first, at most limit.
func (s *toolset) remoteRuns(ctx context.Context, local []runs.Summary, status string, limit int) ([]runs.Summary, error) {
	rem, err := s.deps.Peers.Elsewhere(ctx, "list_runs", map[string]any{"status": status, "limit": limit})
	if err != nil {
		return nil, tool.Coded(tool.CodeInternal, "the session registry could not list your runs on other replicas: %v", err)
	}
	want := func(e runs.Summary) bool { return status == "" || e.Status == status }
	out := sessiontools.Merge(rem, local, func(e *runs.Summary) (string, *string) { return e.ExecutionID, &e.Replica },
		func(a json.RawMessage) []runs.Summary {
			var l ListRunsOut
			if json.Unmarshal(a, &l) != nil {
				return nil
			}
			return slices.DeleteFunc(l.Runs, func(e runs.Summary) bool { return !want(e) })
		},
		func(u sessiontools.Unlisted) (runs.Summary, bool) {
			e, ok := s.unlistedRun(ctx, u)
			return e, ok && want(e)
		})
	slices.SortFunc(out, func(a, b runs.Summary) int {
		if c := b.StartedAt.Compare(a.StartedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.ExecutionID, b.ExecutionID)
	})
	return out[:min(len(out), limit)], nil
}

// unlistedRun is a run known from the registry alone: one whose replica
// did not answer (status unreachable), or stopped (resolved from the
// store and the history, else lost). A run lost longer ago than
// CODEXEC_ARTIFACT_TTL is no longer listed, as an ended run is listed that
// long after its end; get_run still answers for it.
func (s *toolset) unlistedRun(ctx context.Context, u sessiontools.Unlisted) (runs.Summary, bool) {
	if u.LostAt == nil {
		return runs.Summary{ExecutionID: u.ID, Tool: u.Name, Status: sessiontools.StatusUnreachable, StartedAt: u.StartedAt,
			Replica: u.Replica, Note: u.Note}, true
	}
	if ttl := s.deps.Config.ArtifactTTL; ttl > 0 && u.LostAt.Before(time.Now().Add(-ttl)) {
		return runs.Summary{}, false
	}
	return s.deps.Runs.Resolve(ctx, u.Record), true
}
