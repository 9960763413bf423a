package sessionckpt

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// Paused sessions shared by replicas (Options.Shared): the records and
// checkpoints are in stores every replica reads, and a paused session is
// held by no replica — the registry marks its claim paused (Claims.Pause).
// The replica that pauses a session forgets it; a call for it at any
// replica finds its record (Find) and resumes it there after claiming it
// (takeClaim), which one replica of those racing wins: the others answer
// ErrHeldElsewhere, and their callers forward the call to the winner. So
// a resume never makes two live copies of a session.

// enlist is Host.Enlist when shared: p, fetched from the shared records,
// becomes the one paused session of its key here while a resume or close
// of it runs (every such operation removes it when done: the shared
// record, not a copy here, is what the next call reads). Not shared, p is
// returned as it is.
func (c *Checkpointer[S]) enlist(p *Paused[S]) (S, *Paused[S]) {
	if !c.Shared() {
		var zero S
		return zero, p
	}
	return c.host.Enlist(p)
}

// delist removes p, shared, when an operation on it ends without
// resuming or closing it.
func (c *Checkpointer[S]) delist(p *Paused[S]) {
	if c.Shared() {
		c.host.Unlist(p)
	}
}

// takeClaim claims paused session p (p.mu held) for this replica before
// it is resumed or closed here. When another replica holds it, p is
// forgotten here and the answer is ErrHeldElsewhere.
func (c *Checkpointer[S]) takeClaim(ctx context.Context, p *Paused[S]) error {
	if !c.Shared() {
		return nil
	}
	rec := p.rec
	k := RecordKey(rec)
	// Only a paused session (or one this replica holds) is resumed from
	// its record: a record whose session is lost, or was forgotten after
	// that, is an automatic checkpoint of a replica that stopped, which
	// stays lost (docs/checkpoints.md, Replicas).
	switch st, err := c.host.Standing(ctx, k); {
	case err != nil:
		return fmt.Errorf("resume session %s: %w", rec.ID, err)
	case st == sessionreg.StandingNone:
		p.gone = true
		c.delist(p)
		return fmt.Errorf("%w: %s", c.deps.NotFound, rec.ID)
	}
	err := c.host.Claim(tenant.With(ctx, rec.Owner), k, rec.Language, rec.Kind, rec.Name)
	if err == nil {
		return nil
	}
	p.gone, p.elsewhere = true, true
	c.delist(p)
	slog.Debug("paused session held elsewhere", "session_id", rec.ID, "err", err)
	return fmt.Errorf("%w: %s", ErrHeldElsewhere, rec.ID)
}

// unclaimPaused gives back the claim takeClaim took when the resume
// failed but the checkpoint is still there: the session stays paused for
// any replica.
func (c *Checkpointer[S]) unclaimPaused(p *Paused[S]) {
	if !c.Shared() {
		return
	}
	c.sharePausedClaims(p.rec)
	p.gone = true
	c.delist(p)
}

// sharePausedClaims marks rec's session held by no replica.
func (c *Checkpointer[S]) sharePausedClaims(rec checkpoint.Record) {
	c.host.Pause(RecordKey(rec), rec.Kind, rec.Name)
}
