package scalesim

import (
	"time"

	"github.com/codexec/codexec/internal/sessionreg"
)

// Paused sessions shared by replicas (Config.Checkpoints): a session whose
// agent takes a break longer than the idle timeout is paused by its owner
// (its checkpoint written to the shared stores, its claim marked paused);
// the agent comes back on a new MCP session, which lands on any replica,
// and its next call resumes the session there (registry: the route's
// Owner, the resume's Owner and Claim; stores: the record read and the
// checkpoint read). A draining replica pauses every session it holds
// instead of losing them (the model assumes each fits
// CODEXEC_CHECKPOINT_MAX_BYTES and is idle at the end of the drain), and
// a session's next call resumes it on another replica. A killed replica's
// sessions are lost as before: their automatic checkpoints are not resumed
// elsewhere (docs/checkpoints.md). Automatic checkpoints (Config.Auto)
// are written after a call followed by that long a quiet period.

// Store requests of one checkpoint operation, as the server makes them
// with PostgreSQL records and S3 checkpoints.
const (
	// A checkpoint written: the room check (one row), then the record's
	// transaction (BEGIN, upsert, the total read back, COMMIT).
	recordStatementsPerWrite = 5
	// A resume or close of a paused session reads its record (one query).
	recordStatementsPerRead = 1
	// A closed session's record is deleted (one statement).
	recordStatementsPerDelete = 1
)

// CheckpointCounts are a phase's checkpoint work.
type CheckpointCounts struct {
	Paused           int // sessions paused (idle or drain)
	PausedAtDrain    int // of Paused, by a draining replica
	Resumed          int // paused sessions resumed by a call
	ResumedElsewhere int // of Resumed, on another replica than the one that paused it
	Auto             int // automatic checkpoints written
	ClosedPaused     int // paused sessions closed (their task ended)
	BlobPuts         int // checkpoints written to S3
	BlobGets         int // checkpoints read from S3
	BlobDeletes      int // replaced or closed checkpoints removed from S3
	RecordStatements int // PostgreSQL statements on the checkpoint records
}

// pausedAt notes which replica paused a session (for ResumedElsewhere).
type pausedAt struct{ by *replica }

// writeCheckpoint is one checkpoint of c's session written to the stores,
// replacing its previous one.
func (w *world) writeCheckpoint(c *client) {
	w.ph.BlobPuts++
	w.ph.RecordStatements += recordStatementsPerWrite
	if w.stored[c.sess] {
		w.ph.BlobDeletes++
		return
	}
	w.stored[c.sess] = true
	w.storedBytes += w.cfg.CheckpointBytes
	w.res.PeakCheckpointBytes = max(w.res.PeakCheckpointBytes, w.storedBytes)
}

// dropCheckpoint removes id's checkpoint and record (the session ended).
func (w *world) dropCheckpoint(id string) {
	if !w.stored[id] {
		return
	}
	delete(w.stored, id)
	w.storedBytes -= w.cfg.CheckpointBytes
	w.ph.BlobDeletes++
	w.ph.RecordStatements += recordStatementsPerDelete
}

// pause is h pausing c's session: checkpoint, claim marked paused, the
// process gone.
func (w *world) pause(h *replica, c *client) {
	w.pauseID(h, c.sess)
	c.held = nil
	c.paused = &pausedAt{by: h}
}

// pauseID is h pausing its session id (also one whose task moved on after
// a close that did not get through: nobody resumes it, and it stays
// paused until its checkpoint expires).
func (w *world) pauseID(h *replica, id string) {
	if !w.stored[id] {
		w.stored[id] = true
		w.storedBytes += w.cfg.CheckpointBytes
		w.res.PeakCheckpointBytes = max(w.res.PeakCheckpointBytes, w.storedBytes)
	} else {
		w.ph.BlobDeletes++
	}
	w.ph.BlobPuts++
	w.ph.RecordStatements += recordStatementsPerWrite
	if err := w.reg.Pause(w.ctx, id, h.ID, w.clock()); err != nil {
		w.violate("pause %s: %v", id, err)
	}
	delete(h.local, id)
	w.ph.Paused++
}

// idleCheck pauses c's session when no call came since the one at last,
// IdleTimeout ago, and its owner still holds and serves it.
func (w *world) idleCheck(c *client, id string, h *replica, last time.Duration) {
	if c.sess != id || c.held != h || c.lastCall != last || !h.alive || h.draining {
		return
	}
	w.pause(h, c)
}

// autoCheck writes an automatic checkpoint of c's session when it stayed
// quiet for Auto after the call at last.
func (w *world) autoCheck(c *client, id string, h *replica, last time.Duration) {
	if c.sess != id || c.held != h || c.lastCall != last || !h.alive || h.draining {
		return
	}
	w.ph.Auto++
	w.writeCheckpoint(c)
}

// afterCall schedules what follows a call answered by h on c's session:
// the automatic checkpoint and the idle pause.
func (w *world) afterCall(c *client, h *replica) {
	if !w.cfg.Checkpoints {
		return
	}
	id, last := c.sess, w.now
	c.lastCall = last
	if w.cfg.Auto > 0 {
		w.at(w.cfg.Auto, func() { w.autoCheck(c, id, h, last) })
	}
	w.at(w.cfg.IdleTimeout, func() { w.idleCheck(c, id, h, last) })
}

// claimPaused is r taking c's paused session for a call: the record read,
// the Standing check and the claim (a paused claim: the first claim takes
// it, and no other replica races for it in this model).
func (w *world) claimPaused(c *client, r *replica) {
	if c.paused == nil || c.held != nil {
		w.violate("registry says %s paused, the model does not", c.sess)
	}
	w.ph.RecordStatements += recordStatementsPerRead
	if _, err := w.reg.Owner(w.ctx, c.sess); err != nil {
		w.violate("standing of %s: %v", c.sess, err)
	}
	if err := w.reg.Claim(w.ctx, sessionreg.Owner{SessionID: c.sess, Replica: r.Replica, ClaimedAt: w.clock()}); err != nil {
		w.violate("claim paused %s on %s: %v", c.sess, r.ID, err)
	}
	r.local[c.sess] = c
	c.held = r
}

// resume is r resuming c's paused session for a call: claimed, then
// restored from its checkpoint.
func (w *world) resume(c *client, r *replica) {
	by := c.paused
	w.claimPaused(c, r)
	w.ph.BlobGets++
	w.ph.Resumed++
	if by != nil && by.by != r {
		w.ph.ResumedElsewhere++
	}
	c.paused = nil
}

// pauseAll is a draining replica pausing every session it holds.
func (w *world) pauseAll(r *replica) {
	for id, c := range r.local {
		if c.sess == id {
			w.pause(r, c)
		} else {
			w.pauseID(r, id)
		}
		w.ph.PausedAtDrain++
	}
}
