package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// PeerListTimeout bounds how long list_sessions, list_contexts and
// list_runs wait for the other replicas' listings; a replica that has not
// answered by then is shown from the registry, its entries "unreachable".
const PeerListTimeout = 2 * time.Second

// peers lists the caller's sessions, or background runs, on the other
// replicas (sessiontools.Peers): one registry query for the caller's
// records, then, in parallel, the listing tool over the hop on each live
// replica holding one.
type peers struct{ r Router }

// peers returns the listings' view of the other replicas; nil when alone,
// so a listing then costs what it did without replicas.
func (s *Server) peers() sessiontools.Peers {
	if s.deps.Replicas == nil {
		return nil
	}
	return peers{s.deps.Replicas}
}

// runListing is the listing tool of background runs: its records are the
// runs' claims, which the other listings leave out.
const runListing = "list_runs"

// Elsewhere implements sessiontools.Peers.
func (pl peers) Elsewhere(ctx context.Context, toolName string, args map[string]any) (sessiontools.Remote, error) {
	rem := sessiontools.Remote{Here: pl.r.Self().ID}
	if replicas.Forwarded(ctx) {
		return rem, nil // a listing forwarded here answers for this replica only
	}
	p := tenant.From(ctx)
	recs, err := pl.r.Holdings(ctx, p)
	if err != nil {
		return rem, err
	}
	held := map[string][]sessionreg.Owner{} // live records by replica id
	owners := map[string]sessionreg.Replica{}
	for _, o := range recs {
		switch {
		case (o.Label.Kind == runs.LabelKind) != (toolName == runListing):
			// A background run for a listing of sessions, or a session
			// for list_runs.
		case o.Label.Of != "":
			// A context's name: its id's record stands for the context.
		case o.LostAt != nil:
			rem.Unlisted = append(rem.Unlisted, unlisted(o, ""))
		case o.PausedAt != nil:
			// Held by no replica: the registry's record is the listing.
			u := unlisted(o, "")
			u.Paused, u.Replica = true, ""
			rem.Unlisted = append(rem.Unlisted, u)
		default:
			held[o.Replica.ID] = append(held[o.Replica.ID], o)
			owners[o.Replica.ID] = o.Replica
		}
	}
	for _, a := range pl.ask(ctx, p, toolName, args, owners) {
		if a.err == nil {
			rem.Answers = append(rem.Answers, a.out)
			continue
		}
		for _, o := range held[a.replica] {
			rem.Unlisted = append(rem.Unlisted, unlisted(o, a.err.Error()))
		}
	}
	return rem, nil
}

// peerAnswer is one replica's listing, or why there is none.
type peerAnswer struct {
	replica string
	out     json.RawMessage
	err     error
}

// ask calls toolName with args on every owner at once, as principal p,
// and waits at most PeerListTimeout for their answers.
func (pl peers) ask(ctx context.Context, p, toolName string, args map[string]any, owners map[string]sessionreg.Replica) []peerAnswer {
	ctx, cancel := context.WithTimeout(ctx, PeerListTimeout)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	params, _ := json.Marshal(mcp.CallToolParams{Name: toolName, Arguments: args})
	ch := make(chan peerAnswer, len(owners))
	for _, o := range owners {
		go func() {
			raw, err := pl.r.Forward(ctx, o, p, "tools/call", params, nil)
			out, err := listing(raw, err)
			switch {
			case err != nil && ctx.Err() != nil:
				err = fmt.Errorf("replica %s did not answer within %v", o.ID, PeerListTimeout)
			case err != nil:
				err = fmt.Errorf("replica %s did not answer: %s", o.ID, shorten(err.Error(), 160))
			}
			ch <- peerAnswer{replica: o.ID, out: out, err: err}
		}()
	}
	out := make([]peerAnswer, 0, len(owners))
	for range owners {
		out = append(out, <-ch)
	}
	return out
}

// listing is the structured content of a listing tool's result; its
// failure (a draining replica refuses calls) is an error.
func listing(raw json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil {
		return nil, err
	}
	var res struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if res.IsError || len(res.StructuredContent) == 0 {
		var e struct{ Error string }
		_ = json.Unmarshal(res.StructuredContent, &e)
		return nil, errors.New(cmp.Or(e.Error, "no listing in its answer"))
	}
	return res.StructuredContent, nil
}

// shorten cuts s to at most n bytes (a note costs the agent context).
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// unlisted is a registry record as the listings show it.
func unlisted(o sessionreg.Owner, note string) sessiontools.Unlisted {
	return sessiontools.Unlisted{ID: o.SessionID, Kind: o.Label.Kind, Language: o.Label.Language, Name: o.Label.Name,
		StartedAt: o.ClaimedAt, Replica: o.Replica.ID, LostAt: o.LostAt, Note: note, Record: o}
}
