package scalesim

import (
	"fmt"
	"slices"

	"github.com/codexec/codexec/internal/sessionreg"
)

// startReplica starts a new replica (pod incarnation). Initial replicas are
// up in HAProxy's view at once; later ones after Rise passed checks.
func (w *world) startReplica(initial bool) *replica {
	n := len(w.replicas) + 1
	r := &replica{
		Replica: sessionreg.Replica{ID: fmt.Sprintf("replica-%02d", n), Addr: fmt.Sprintf("10.0.%d.%d:8080", n/250, n%250+1)},
		alive:   true, proxyUp: initial, local: map[string]*client{},
	}
	w.replicas = append(w.replicas, r)
	w.byAddr[r.Addr] = r
	w.heartbeat(r)
	w.at(w.uniform(w.cfg.CheckInter), func() { w.check(r) })
	w.at(w.uniform(w.cfg.Sweep), func() { w.sweep(r) })
	w.at(w.uniform(w.cfg.ForgetEvery), func() { w.forget(r) })
	return r
}

// heartbeat renews r's lease while the process runs. With LostAtSigterm a
// draining replica has dropped its lease with its sessions and must not
// renew it: the renewal would bring the lease back, to lapse after exit.
func (w *world) heartbeat(r *replica) {
	if !r.alive || (r.draining && w.cfg.LostAtSigterm) {
		return
	}
	if err := w.reg.Heartbeat(w.ctx, r.Replica, w.clock()); err != nil {
		w.violate("heartbeat %s: %v", r.ID, err)
	}
	w.at(w.cfg.Heartbeat, func() { w.heartbeat(r) })
}

// sweep is a serving replica looking for expired replicas and marking
// their sessions lost.
func (w *world) sweep(r *replica) {
	if !r.alive {
		return
	}
	if !r.draining {
		exp, err := w.reg.Expired(w.ctx, w.clock(), w.cfg.Lease)
		if err != nil {
			w.violate("expired: %v", err)
		}
		for _, x := range exp {
			w.markLost(x.ID)
		}
	}
	w.at(w.cfg.Sweep, func() { w.sweep(r) })
}

// markLost is a survivor marking an expired replica's sessions lost.
func (w *world) markLost(id string) {
	dead := w.find(id)
	if dead == nil || dead.alive {
		w.violate("lease of %s expired while it runs", id)
	}
	n, err := w.reg.MarkLost(w.ctx, id, w.clock())
	if err != nil {
		w.violate("mark lost %s: %v", id, err)
	}
	w.ph.Lost += n
	if dead != nil && dead == w.killed && n > 0 {
		w.res.Detection = w.now - w.killAt
		if n != w.res.HeldAtKill {
			w.violate("marked %d sessions of %s lost, it held %d", n, id, w.res.HeldAtKill)
		}
	}
}

func (w *world) forget(r *replica) {
	if !r.alive {
		return
	}
	if _, err := w.reg.ForgetLost(w.ctx, w.clock().Add(-w.cfg.LostKeep)); err != nil {
		w.violate("forget lost: %v", err)
	}
	w.at(w.cfg.ForgetEvery, func() { w.forget(r) })
}

// check is one HAProxy health check of r (GET /readyz).
func (w *world) check(r *replica) {
	if r.alive && !r.draining {
		r.okRun, r.failRun = r.okRun+1, 0
		if !r.proxyUp && r.okRun >= w.cfg.Rise {
			r.proxyUp = true
		}
	} else {
		r.okRun, r.failRun = 0, r.failRun+1
		if r.proxyUp && r.failRun >= w.cfg.Fall {
			r.proxyUp = false
		}
	}
	if r.alive || r.proxyUp {
		w.at(w.cfg.CheckInter, func() { w.check(r) })
	}
}

// rollingUpdate replaces the replicas one at a time as the chart's
// one-pod-per-node Deployment does (maxSurge 0, maxUnavailable 1): the old
// pod's preStop sleep, SIGTERM and drain, exit, then the new pod starts on
// the node; the next old pod goes once the new one is ready.
func (w *world) rollingUpdate() {
	w.beginPhase(PhaseRolling)
	old := slices.Clone(w.replicas)
	var step func(i int)
	step = func(i int) {
		if i == len(old) {
			w.beginPhase(PhaseSettle)
			w.at(w.cfg.Settle, w.killOne)
			return
		}
		r := old[i]
		w.at(w.cfg.PreStop, func() {
			r.draining = true
			if w.cfg.LostAtSigterm {
				w.markOwnLost(r)
			}
			w.at(w.cfg.Drain, func() {
				if !w.cfg.LostAtSigterm {
					w.markOwnLost(r)
				}
				w.stopProcess(r)
				w.at(w.cfg.Startup, func() {
					w.startReplica(false)
					step(i + 1)
				})
			})
		})
	}
	step(0)
}

// markOwnLost is a draining replica marking its own sessions lost; it
// holds none after.
func (w *world) markOwnLost(r *replica) {
	if w.cfg.Checkpoints {
		w.pauseAll(r)
	}
	held := len(r.local)
	r.stopped = true
	n, err := w.reg.MarkLost(w.ctx, r.ID, w.clock())
	if err != nil {
		w.violate("mark lost %s: %v", r.ID, err)
	}
	if n != held {
		w.violate("drained %s marked %d sessions lost, it held %d", r.ID, n, held)
	}
	w.ph.Lost += n
	w.dropSessions(r)
}

func (w *world) stopProcess(r *replica) {
	r.alive, r.mcp = false, 0
	w.dropSessions(r)
}

func (w *world) dropSessions(r *replica) {
	for id, c := range r.local {
		if c.sess == id {
			c.held = nil
		}
	}
	r.local = map[string]*client{}
}

// killOne kills a replica without drain (kill -9, node loss); a survivor
// finds it through its expired lease. The node is not replaced within the
// run.
func (w *world) killOne() {
	w.beginPhase(PhaseNodeLoss)
	var live []*replica
	for _, r := range w.replicas {
		if r.alive {
			live = append(live, r)
		}
	}
	r := live[w.rng.IntN(len(live))]
	w.killed, w.killAt = r, w.now
	w.res.HeldAtKill = len(r.local)
	r.stopped = true
	w.stopProcess(r)
}

// auditTick checks, through the uncounted registry, that every session a
// replica holds is registered to that replica alone and not lost, and that
// no session is held twice.
func (w *world) auditTick() {
	seen := map[string]string{}
	for _, r := range w.replicas {
		for id := range r.local {
			if prev, dup := seen[id]; dup {
				w.violate("session %s held by %s and %s", id, prev, r.ID)
			}
			seen[id] = r.ID
			w.res.AuditReads++
			o, err := w.audit.Owner(w.ctx, id)
			switch {
			case err != nil:
				w.violate("audit %s: %v", id, err)
			case o.Replica.ID != r.ID || o.LostAt != nil:
				w.violate("audit %s: held by %s, registry says %s (lost %v)", id, r.ID, o.Replica.ID, o.LostAt)
			}
		}
	}
	w.at(w.cfg.Audit, w.auditTick)
}
