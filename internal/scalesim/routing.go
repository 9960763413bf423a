package scalesim

import (
	"errors"

	"github.com/codexec/codexec/internal/sessionreg"
)

// leastconn is HAProxy's choice for a request without a usable stick
// entry: the server up in its view with the fewest connections, ties
// broken at random. A dead server it still believes up has no connections
// left, so it attracts new requests until its checks fail.
func (w *world) leastconn() *replica {
	var best []*replica
	for _, r := range w.replicas {
		if !r.proxyUp {
			continue
		}
		switch {
		case len(best) == 0 || r.mcp < best[0].mcp:
			best = append(best[:0], r)
		case r.mcp == best[0].mcp:
			best = append(best, r)
		}
	}
	if len(best) == 0 {
		return nil
	}
	return best[w.rng.IntN(len(best))]
}

// pick is the server HAProxy sends a request of c's MCP session to:
// the stuck one while its checks pass, else leastconn.
func (w *world) pick(c *client) *replica {
	if r := c.stuck; r != nil && r.proxyUp {
		return r
	}
	return w.leastconn()
}

// openMCP ends c's MCP session and opens a new one through the proxy (an
// initialize without Mcp-Session-Id); the answering replica's id is stored
// in the stick table. It reports the failure kind, "" on success.
func (w *world) openMCP(c *client) string {
	w.closeMCP(c)
	return w.openOn(c, w.leastconn())
}

// openOn opens c's new MCP session on r (nil: no server up).
func (w *world) openOn(c *client, r *replica) string {
	switch {
	case r == nil:
		return FailNoServer
	case !r.alive:
		return FailProxy
	}
	c.mcpID, c.mcpOn = w.id("m"), r
	c.stuck = r
	w.stickEntries++
	r.mcp++
	return ""
}

func (w *world) closeMCP(c *client) {
	if c.mcpOn != nil && c.mcpOn.alive {
		c.mcpOn.mcp--
	}
	c.mcpID, c.mcpOn = "", nil
}

// reach is the replica a request of c gets to through the proxy, after at
// most one 404 and new MCP session, or the failure kind.
func (w *world) reach(c *client) (*replica, string) {
	if c.mcpOn == nil {
		if f := w.openMCP(c); f != "" {
			return nil, f
		}
	}
	r := w.pick(c)
	switch {
	case r == nil:
		return nil, FailNoServer
	case !r.alive:
		return nil, FailProxy
	case r == c.mcpOn:
		return r, ""
	}
	// Not the issuer (the stuck replica is down or gone): 404, and the
	// client opens a new MCP session, which the proxy sends to r's peers
	// by leastconn.
	w.ph.Reinits++
	if f := w.openMCP(c); f != "" {
		return nil, f
	}
	return c.mcpOn, ""
}

// answeredLost is locate's outcome for a call answered "session lost"
// (an answer, not a failure).
const answeredLost = "lost"

// call is one tool call of c on its codexec session (start_session first
// when it has none), then schedules the next.
func (w *world) call(c *client) {
	w.ph.Calls++
	gap := w.exp(w.callGap())
	if ok := w.serve(c); !ok {
		gap = w.cfg.Retry
	} else if w.cfg.Checkpoints && w.rng.Float64() < w.cfg.BreakShare {
		// The agent takes a break; it comes back on a new connection,
		// which lands on any replica.
		w.at(w.exp(w.cfg.Break), func() { w.land(c); w.call(c) })
		return
	}
	w.at(gap, func() { w.call(c) })
}

// serve routes one call of c; it reports whether the client got an answer
// (a result or "session lost").
func (w *world) serve(c *client) bool {
	r, f := w.reach(c)
	if f == "" && r.draining {
		f = FailDraining
	}
	if f != "" {
		w.fail(f)
		return false
	}
	if c.sess == "" {
		return w.startSession(c, r)
	}
	owner, hops, f := w.locate(c, r, true)
	if f == answeredLost {
		return true
	}
	if f != "" {
		w.fail(f)
		return false
	}
	w.execute(c, owner, hops)
	return true
}

// locate finds the replica that executes c's call reaching r: r itself
// when it holds the session, or when the session is paused (r takes it:
// restore says whether it resumes it or, for a close, only claims it),
// else the owner the registry names, one hop away. A forwarded call
// arriving at a replica that does not hold the session is answered with
// an error there, never forwarded again.
func (w *world) locate(c *client, r *replica, restore bool) (*replica, int, string) {
	if c.held == r {
		return r, 0, ""
	}
	o, err := w.reg.Owner(w.ctx, c.sess)
	if err != nil {
		w.violate("owner of %s: %v", c.sess, err)
		return nil, 0, FailUnreachable
	}
	var lost *sessionreg.LostError
	if errors.As(o.Lost(), &lost) {
		w.told(c, lost)
		return nil, 0, answeredLost
	}
	if o.PausedAt != nil {
		if restore {
			w.resume(c, r)
		} else {
			w.claimPaused(c, r)
			c.paused = nil
			w.ph.ClosedPaused++
		}
		return r, 0, ""
	}
	if o.Replica.ID == r.ID {
		w.violate("registry names %s owner of %s, which it does not hold", r.ID, c.sess)
	}
	dst := w.byAddr[o.Replica.Addr]
	switch {
	case dst == nil || !dst.alive:
		return nil, 1, FailUnreachable
	case dst.draining:
		return nil, 1, FailDraining
	case c.held != dst:
		w.violate("forwarded call for %s reached %s, which does not hold it", c.sess, dst.ID)
		return nil, 1, FailUnreachable
	}
	return dst, 1, ""
}

// told is a call answered "session lost": the client starts a new session
// on its next call.
func (w *world) told(c *client, lost *sessionreg.LostError) {
	w.ph.LostTold++
	if h := c.held; h != nil && !h.stopped {
		w.violate("session %s answered lost while %s holds it", c.sess, h.ID)
	}
	if rep := w.find(lost.Replica); rep == nil || !rep.stopped {
		w.violate("session %s lost from %s, which was neither drained nor killed", c.sess, lost.Replica)
	}
	c.sess = ""
}

func (w *world) find(id string) *replica {
	for _, r := range w.replicas {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// execute is a call answered with a result by owner.
func (w *world) execute(c *client, owner *replica, hops int) {
	if !owner.alive || owner.draining || c.held != owner {
		w.violate("call for %s answered by %s (alive %v, draining %v)", c.sess, owner.ID, owner.alive, owner.draining)
	}
	w.res.MaxHops = max(w.res.MaxHops, hops)
	w.ph.Succeeded++
	if hops > 0 {
		w.ph.Forwarded++
	}
	x := w.rng.Float64()
	if x < w.cfg.ExecShare {
		w.ph.HistoryAppends++
	}
	if x < w.cfg.ScriptShare {
		w.ph.ScriptReads++
	}
	w.afterCall(c, owner)
}

// startSession is start_session on r: r claims a fresh id.
func (w *world) startSession(c *client, r *replica) bool {
	id := w.id("s")
	if err := w.reg.Claim(w.ctx, sessionreg.Owner{SessionID: id, Replica: r.Replica, ClaimedAt: w.clock()}); err != nil {
		w.violate("claim %s on %s: %v", id, r.ID, err)
		return false
	}
	r.local[id] = c
	c.sess, c.held, c.paused = id, r, nil
	c.gen++
	w.ph.Started++
	w.ph.Succeeded++
	w.ph.HistoryAppends++ // the session's start is logged like a run
	gen := c.gen
	w.at(w.exp(w.cfg.SessionLife), func() { w.endTask(c, gen) })
	return true
}

// newTask starts an agent task: a new MCP session and a codexec session
// in it (retried until it works).
func (w *world) newTask(c *client) {
	w.closeMCP(c)
	c.sess = ""
	w.ph.Calls++
	if !w.serve(c) {
		w.at(w.cfg.Retry, func() { w.newTask(c) })
	}
}

// endTask is close_session (released by the owner, forwarded if need be),
// then the next task of the slot.
func (w *world) endTask(c *client, gen int) {
	if c.gen != gen || c.sess == "" {
		return // that session was lost and replaced
	}
	w.ph.Calls++
	id := c.sess
	if w.closeSession(c) {
		w.ph.Succeeded++
	} else if h := c.held; h != nil && h.alive && !h.draining {
		// The close did not get through; the owner closes the idle session later.
		w.at(w.cfg.IdleTimeout, func() {
			if h.alive && !h.draining && h.local[id] != nil {
				w.release(h, id)
			}
		})
	}
	c.sess = ""
	w.newTask(c)
}

// closeSession routes close_session like any call; the owner releases the
// session. It reports whether it was answered with a result.
func (w *world) closeSession(c *client) bool {
	r, f := w.reach(c)
	if f == "" && r.draining {
		f = FailDraining
	}
	if f != "" {
		w.fail(f)
		return false
	}
	owner, _, f := w.locate(c, r, false)
	if f != "" {
		if f != answeredLost {
			w.fail(f)
		}
		return false
	}
	w.release(owner, c.sess)
	return true
}

func (w *world) release(h *replica, id string) {
	if err := w.reg.Release(w.ctx, id, h.ID); err != nil {
		w.violate("release %s: %v", id, err)
	}
	if c := h.local[id]; c != nil && c.sess == id {
		c.held = nil
	}
	delete(h.local, id)
	w.dropCheckpoint(id)
}

// reconnect is a client whose connection dropped: it opens a new MCP
// session and keeps its codexec session. It lands on a replica chosen at
// random among those up, not by leastconn: with one HAProxy, leastconn
// would mostly send it back to the replica it just left (whose connection
// count just dropped), so random landing is the worse case for forwarding,
// and the case of clients coming back through another proxy instance.
func (w *world) reconnect(c *client) {
	if c.mcpOn != nil {
		w.land(c)
	}
	w.at(w.exp(w.cfg.Reconnect), func() { w.reconnect(c) })
}

// land opens c's new MCP session on a replica chosen at random among
// those up (see reconnect).
func (w *world) land(c *client) {
	w.closeMCP(c)
	var up []*replica
	for _, r := range w.replicas {
		if r.proxyUp {
			up = append(up, r)
		}
	}
	var r *replica
	if len(up) > 0 {
		r = up[w.rng.IntN(len(up))]
	}
	w.openOn(c, r)
}
