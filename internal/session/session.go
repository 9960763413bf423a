package session

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/frame"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/sandbox"
)

// Kinds of registry entries: sessions come from start_session, contexts
// from create_context. Both are the same thing.
const (
	KindSession = "session"
	KindContext = "context"
)

// Session is one long-running interpreter driven over the frame protocol.
// Exec calls are serialized by execMu; the other fields are guarded by mu.
type Session struct {
	ID, Name, Kind, Language, Description string
	Workspace                             string
	StartedAt                             time.Time
	// Owner is the principal that started the session (tenant.From).
	Owner string

	// storage names the session on disk and in the sandbox (see storageName).
	storage string

	proc    sandbox.Process
	stdin   *os.File
	enc     *frame.Encoder // requests to the driver, on stdin
	outMux  *frame.Demux
	errMux  *frame.Demux
	execMu  sync.Mutex
	mu      sync.Mutex
	nextID  int64
	waiting *pending
	ready   chan reply
	dead    chan struct{}
	exit    sandbox.Exit
	closing bool
	ended   bool

	lastActivity time.Time
	executions   int
	rssKB        int64
	packages     []Package
	pkgDirs      map[string]string
	// writable: the session's code may write Workspace (false for a
	// caller's directory outside the writable roots).
	writable bool
	// ws is the workspace with its bounded disk; closed by terminate once
	// the interpreter is gone.
	ws *engine.Workspace
	// workingDir is the caller's working_dir ("" for codexec's own
	// workspace); pkgBase the directory of its installed packages.
	workingDir, pkgBase string

	// Checkpoints (guarded by mu): the current one, the executions count
	// it saw, the report a resume left for the next Exec, the automatic
	// checkpoint's timer and hold-back, and whether this is a spare
	// interpreter nobody owns yet.
	ckpt      *Record
	ckExecs   int
	resumed   *Resumed
	autoTimer *time.Timer
	autoHold  time.Time
	spare     bool
}

// Package is one package installed into a session.
type Package struct {
	Language, Name, Version string
}

// pending is the request in flight.
type pending struct {
	id    int64
	reply chan reply
	end   chan struct{}
	// chunks collect a checkpoint's bytes (nil for other requests).
	chunks *chunks
}

// onOut handles frames from the driver's stdout.
func (s *Session) onOut(r reply) {
	if r.Op == "ready" {
		s.mu.Lock()
		s.rssKB = r.RSSKB
		s.mu.Unlock()
		select {
		case s.ready <- r:
		default:
		}
		return
	}
	s.mu.Lock()
	p := s.waiting
	s.mu.Unlock()
	if p != nil && p.id == r.ID {
		select {
		case p.reply <- r:
		default:
		}
	}
}

// onErr handles end frames from the driver's stderr.
func (s *Session) onErr(r reply) {
	s.mu.Lock()
	p := s.waiting
	s.mu.Unlock()
	if p != nil && p.id == r.ID && r.End {
		select {
		case p.end <- struct{}{}:
		default:
		}
	}
}

// execOutcome is the raw outcome of one request.
type execOutcome struct {
	reply       reply
	stdout      string
	stderr      string
	truncated   bool
	timedOut    bool
	cancelled   bool
	interrupted bool
	// lost is set when the interpreter died or was killed: state is gone.
	lost     bool
	lostWhy  string
	duration time.Duration
}

// exec sends code and waits for the answer, interrupting on timeout and
// killing the interpreter if it does not answer the interrupt within grace.
func (s *Session) exec(ctx context.Context, code string, timeout, grace time.Duration, lim output.Limits, obs output.Observer) execOutcome {
	outSink, errSink := output.NewSink(lim, obs.For("stdout")), output.NewSink(lim, obs.For("stderr"))
	p := s.begin(outSink, errSink)
	defer s.finish()
	start := time.Now()
	oc := s.await(ctx, p, code, timeout, grace)
	oc.duration = time.Since(start)
	var t1, t2 bool
	oc.stdout, t1 = outSink.Result()
	oc.stderr, t2 = errSink.Result()
	oc.truncated = t1 || t2
	return oc
}

func (s *Session) begin(out, errw *output.Sink) *pending {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	p := &pending{id: s.nextID, reply: make(chan reply, 1), end: make(chan struct{}, 1)}
	s.waiting = p
	s.lastActivity = time.Now()
	s.outMux.SetSink(out)
	s.errMux.SetSink(errw)
	return p
}

func (s *Session) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waiting = nil
	s.outMux.SetSink(nil)
	s.errMux.SetSink(nil)
	s.lastActivity = time.Now()
	s.executions++
}

func (s *Session) await(ctx context.Context, p *pending, code string, timeout, grace time.Duration) execOutcome {
	if err := s.send(map[string]any{"id": p.id, "op": "exec", "code": code}); err != nil {
		return execOutcome{lost: true, lostWhy: "the interpreter is not accepting input: " + err.Error()}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-p.reply:
		return s.settle(p, r)
	case <-s.dead:
		return execOutcome{lost: true, lostWhy: s.deathReason()}
	case <-ctx.Done():
		oc := s.interrupt(p, grace, false)
		oc.cancelled = true
		return oc
	case <-timer.C:
		return s.interrupt(p, grace, true)
	}
}

// settle waits briefly for the stderr end frame so stderr is complete.
func (s *Session) settle(p *pending, r reply) execOutcome {
	select {
	case <-p.end:
	case <-time.After(2 * time.Second):
	}
	s.mu.Lock()
	if r.RSSKB > 0 {
		s.rssKB = r.RSSKB
	}
	s.mu.Unlock()
	return execOutcome{reply: r, interrupted: r.Interrupted}
}

func (s *Session) interrupt(p *pending, grace time.Duration, timedOut bool) execOutcome {
	_ = s.send(map[string]any{"op": "interrupt"})
	select {
	case r := <-p.reply:
		oc := s.settle(p, r)
		oc.timedOut, oc.interrupted = timedOut, true
		return oc
	case <-s.dead:
		return execOutcome{timedOut: timedOut, lost: true, lostWhy: s.deathReason()}
	case <-time.After(grace):
	}
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.kill()
	why := fmt.Sprintf("the interpreter did not respond to the interrupt within %v and was killed", grace)
	return execOutcome{timedOut: timedOut, lost: true, lostWhy: why}
}

func (s *Session) send(msg map[string]any) error { return s.enc.Encode(msg) }

// isDead reports whether the interpreter has exited.
func (s *Session) isDead() bool {
	select {
	case <-s.dead:
		return true
	default:
		return false
	}
}

// deathReason describes how the interpreter ended.
func (s *Session) deathReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.exit.OOMKilled:
		return "the interpreter was killed for exceeding its memory limit"
	case s.exit.Signal != 0:
		return fmt.Sprintf("the interpreter was killed by signal %d", s.exit.Signal)
	default:
		return fmt.Sprintf("the interpreter exited with code %d", s.exit.Code)
	}
}

// kill stops the interpreter and everything it started.
func (s *Session) kill() {
	_ = s.proc.Kill()
	<-s.dead
}

// watch waits for the interpreter to exit and records how.
func (s *Session) watch(onDeath func(*Session)) {
	ex, _ := s.proc.Wait()
	_ = s.proc.Release(time.Second)
	s.mu.Lock()
	s.exit = ex
	closing := s.closing
	s.mu.Unlock()
	close(s.dead)
	if !closing && onDeath != nil {
		onDeath(s)
	}
}

// Info is a snapshot of a session for listings.
type Info struct {
	ID, Name, Kind, Language, Description string
	Status                                string
	StartedAt, LastActivity               time.Time
	Executions                            int
	Pid                                   int
	MemoryMB                              float64
	Packages                              []string
	// CheckpointBytes is the size of the session's current checkpoint (0:
	// none).
	CheckpointBytes int64
}

func (s *Session) info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	status := "active"
	if s.isDead() {
		status = "dead"
	}
	pkgs := []string{}
	for _, p := range s.packages {
		pkgs = append(pkgs, p.Name)
	}
	// The host pid of the top process: the interpreter itself in subprocess
	// mode, the sandbox launcher otherwise (the driver's own pid may be a
	// pid-namespace number).
	pid := s.proc.Pid()
	var ck int64
	if s.ckpt != nil {
		ck = s.ckpt.Bytes
	}
	return Info{ID: s.ID, Name: s.Name, Kind: s.Kind, Language: s.Language, Description: s.Description,
		Status: status, StartedAt: s.StartedAt, LastActivity: s.lastActivity, Executions: s.executions,
		Pid: pid, MemoryMB: float64(s.rssKB) / 1024, Packages: pkgs, CheckpointBytes: ck}
}

// OpenWorkspace opens the session's workspace for the server to act on
// with the sandbox user's rights (placing uploads, reading artifacts); the
// caller closes it.
func (s *Session) OpenWorkspace() (*files.Root, error) { return s.ws.Open() }

// Writable reports whether the session's code may write its workspace
// (false for a caller's working_dir outside the writable roots).
func (s *Session) Writable() bool { return s.writable }
