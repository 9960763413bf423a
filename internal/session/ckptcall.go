package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
)

// ErrStateTooBig is a checkpoint refused because the state is over the
// per-session limit.
var ErrStateTooBig = errors.New("the session's state is over the checkpoint limit")

// onChunk collects a checkpoint's bytes for the request in flight, up to
// its limit (the rest is dropped and the length check fails the request).
func (s *Session) onChunk(id int64, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.waiting
	if p == nil || p.id != id || p.chunks == nil {
		return
	}
	if int64(len(p.chunks.b)+len(data)) > p.chunks.max {
		p.chunks.over = true
		return
	}
	p.chunks.b = append(p.chunks.b, data...)
}

// chunks are the checkpoint bytes a request receives.
type chunks struct {
	b    []byte
	max  int64
	over bool
}

// checkpointState asks the driver for its state: at most max bytes,
// within timeout (then the request is interrupted). The caller holds
// execMu.
func (s *Session) checkpointState(ctx context.Context, max int64, timeout, grace time.Duration) ([]byte, checkpoint.Report, error) {
	p := s.beginCall(&chunks{max: max})
	defer s.endCall()
	r, err := s.call(ctx, p, map[string]any{"id": p.id, "op": "checkpoint", "max": max}, nil, timeout, grace)
	if err != nil {
		return nil, checkpoint.Report{}, err
	}
	s.mu.Lock()
	got := p.chunks
	s.mu.Unlock()
	switch {
	case r.TooBig || got.over:
		return nil, checkpoint.Report{}, fmt.Errorf("%w of %d bytes", ErrStateTooBig, max)
	case !r.OK:
		return nil, checkpoint.Report{}, fmt.Errorf("the interpreter could not checkpoint its state: %s", r.Error)
	case int64(len(got.b)) != r.Bytes:
		return nil, checkpoint.Report{}, fmt.Errorf("checkpoint: received %d of %d bytes from the interpreter", len(got.b), r.Bytes)
	}
	return got.b, r.Report, nil
}

// restoreState hands the driver a checkpoint's interpreter state to
// restore (fork: reseed random generators). The caller holds execMu.
func (s *Session) restoreState(ctx context.Context, state []byte, fork bool, timeout, grace time.Duration) (checkpoint.Report, error) {
	p := s.beginCall(nil)
	defer s.endCall()
	r, err := s.call(ctx, p, map[string]any{"id": p.id, "op": "restore", "bytes": len(state), "fork": fork}, state, timeout, grace)
	if err != nil {
		return checkpoint.Report{}, err
	}
	if !r.OK {
		return checkpoint.Report{}, fmt.Errorf("the interpreter could not restore the checkpoint: %s", r.Error)
	}
	return r.Report, nil
}

// warmUp readies a spare interpreter for a restore: it loads what a
// restore needs (pickle, v8) before anyone waits for it and faults in
// the memory rv asks for (python; spare.go). Called again, it grows
// them. The caller holds execMu.
func (s *Session) warmUp(ctx context.Context, rv reserve, timeout, grace time.Duration) error {
	p := s.beginCall(nil)
	defer s.endCall()
	msg := map[string]any{"id": p.id, "op": "warm", "reserve": rv.Objects, "inbox": rv.Inbox}
	r, err := s.call(ctx, p, msg, nil, timeout, grace)
	if err == nil && !r.OK {
		err = errors.New(r.Error)
	}
	return err
}

// beginCall starts a request that is not user code: no output sinks (what
// the code prints meanwhile, from __getstate__ say, is dropped) and it
// does not count as an execution or as activity.
func (s *Session) beginCall(c *chunks) *pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	p := &pending{id: s.nextID, reply: make(chan reply, 1), end: make(chan struct{}, 1), chunks: c}
	s.waiting = p
	s.outMux.SetSink(nil)
	s.errMux.SetSink(nil)
	return p
}

func (s *Session) endCall() {
	s.mu.Lock()
	s.waiting = nil
	s.mu.Unlock()
}

// call sends msg (and payload, raw, after it) and waits for the reply; on
// timeout or cancellation it interrupts the request and, when the driver
// does not answer within grace, kills it. An error means no reply came.
func (s *Session) call(ctx context.Context, p *pending, msg map[string]any, payload []byte, timeout, grace time.Duration) (reply, error) {
	if err := s.sendWith(msg, payload); err != nil {
		return reply{}, fmt.Errorf("the interpreter is not accepting input: %w", err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.reply:
		s.settle(p, r)
		return r, nil
	case <-s.dead:
		return reply{}, errors.New(s.deathReason())
	case <-ctx.Done():
	case <-timer.C:
	}
	oc := s.interrupt(p, grace, true)
	if oc.lost {
		return reply{}, fmt.Errorf("%s was stopped after %v: %s", msg["op"], timeout, oc.lostWhy)
	}
	return reply{}, fmt.Errorf("%s was interrupted after %v", msg["op"], timeout)
}

// sendWith writes one request line and, right after it, payload: the
// driver reads the payload's length from the line. Requests are sent by
// the holder of execMu only, so nothing comes between the two.
func (s *Session) sendWith(msg map[string]any, payload []byte) error {
	if err := s.send(msg); err != nil || payload == nil {
		return err
	}
	if len(payload) > 64<<10 {
		growPipe(s.stdin)
	}
	_, err := s.stdin.Write(payload)
	return err
}
