package sessionckpt

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/tenant"
)

// childKind is the kind of a fork child: a session (session.KindSession),
// whatever its parent's.
const childKind = "session"

// ForkResult is one fork child: its session id, or why it failed.
type ForkResult struct {
	ID  string
	Err error
}

// ForkInfo is the outcome of Fork.
type ForkInfo struct {
	Children []ForkResult
	// Resumed is the first child's report (what each child restored and
	// lost; children differ only when one fails to import something).
	Resumed *Resumed
}

// Fork makes count new sessions, each restored from a fresh checkpoint of
// ctx's principal's session idOrName (its latest checkpoint when paused)
// in its own sandbox, with a copy of its workspace and reseeded random
// generators. Each child counts against the
// session limits; per-child failures are in the result.
func (c *Checkpointer[S]) Fork(ctx context.Context, idOrName string, count int, allowSecrets bool) (ForkInfo, error) {
	if count < 1 || count > c.o.MaxFork {
		return ForkInfo{}, fmt.Errorf("%w: count must be 1-%d (CODEXEC_CHECKPOINT_MAX_FORK), got %d", ErrBadCount, c.o.MaxFork, count)
	}
	rec, err := c.forkSource(ctx, idOrName)
	if err != nil {
		return ForkInfo{}, err
	}
	if names := rec.Secrets; len(names) > 0 && !allowSecrets {
		return ForkInfo{}, &ErrSecrets{Names: names}
	}
	d, err := c.read(ctx, rec)
	if err != nil {
		return ForkInfo{}, err
	}
	info := c.forkChildren(ctx, rec, d, count)
	// The next fork this wide finds its interpreters started.
	c.spares.WantN(rec.Language, count)
	return info, nil
}

// forkSource returns the checkpoint children restore: a fresh one of a
// live session, the latest of a paused one.
func (c *Checkpointer[S]) forkSource(ctx context.Context, idOrName string) (checkpoint.Record, error) {
	s, p, err := c.host.Lookup(ctx, idOrName)
	if err != nil {
		return checkpoint.Record{}, err
	}
	if p != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.rec, nil
	}
	s.Runs().Lock()
	defer s.Runs().Unlock()
	if s.Conn().IsDead() {
		return checkpoint.Record{}, fmt.Errorf("session %s is dead (%s): there is no state to fork", s.Facts().ID, s.Conn().DeathReason())
	}
	if s.Checkpoints().unchanged(s.Facts().Executions) {
		// The children get the parent's network as it is now, not as it
		// was at the checkpoint: a policy narrowed since stays narrowed.
		rec := *s.Checkpoints().Current()
		rec.Network = ruleStrings(s.Facts().Network)
		return rec, nil
	}
	return c.snapshot(ctx, s, true)
}

// forkChildren restores count children in parallel.
func (c *Checkpointer[S]) forkChildren(ctx context.Context, rec checkpoint.Record, d checkpoint.Decoded, count int) ForkInfo {
	out := ForkInfo{Children: make([]ForkResult, count)}
	reps := make([]*Resumed, count)
	done := make(chan int, count)
	for i := range count {
		go func() {
			defer func() { done <- i }()
			id, rep, err := c.forkOne(ctx, rec, d, Key{rec.Owner, c.deps.ChildID()})
			if err != nil {
				out.Children[i].Err = err
				return
			}
			out.Children[i].ID = id
			reps[i] = &Resumed{AgeS: AgeS(rec.TakenAt), Report: rep}
		}()
	}
	for range count {
		<-done
	}
	for _, r := range reps {
		if r != nil {
			out.Resumed = r
			break
		}
	}
	if out.Resumed != nil && rec.WorkingDir != "" {
		out.Resumed.Notes = append(out.Resumed.Notes, "each child has an empty workspace of its own")
	}
	return out
}

// forkOne makes child k of rec's session and returns its id.
func (c *Checkpointer[S]) forkOne(ctx context.Context, rec checkpoint.Record, d checkpoint.Decoded, k Key) (string, checkpoint.Report, error) {
	if err := c.host.Reserve(k, childKind); err != nil {
		return "", checkpoint.Report{}, err
	}
	if err := c.host.Claim(tenant.With(ctx, rec.Owner), k, rec.Language, childKind, ""); err != nil {
		c.host.Drop(k)
		return "", checkpoint.Report{}, err
	}
	s, rep, err := c.restoreDecoded(ctx, d, k, rec.Language, "", true)
	if err != nil {
		c.host.Drop(k)
		c.host.Release(k, childKind, "")
		return "", checkpoint.Report{}, err
	}
	f := s.Facts()
	f.Kind, f.Description, f.Network = childKind, "fork of "+rec.ID, recordRules(rec)
	c.host.Adopt(s, f, nil)
	slog.Info("session forked", "parent", rec.ID, "child", k.ID)
	return k.ID, rep, nil
}
