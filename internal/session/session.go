package session

import (
	"context"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// Kinds of registry entries: sessions come from start_session, contexts
// from create_context. Both are the same thing.
const (
	KindSession = "session"
	KindContext = "context"
)

// Session is one long-running interpreter driven over the driver protocol
// (package driver).
// Exec calls are serialized by execMu; the other fields are guarded by mu.
type Session struct {
	ID, Name, Kind, Language, Description string
	Workspace                             string
	StartedAt                             time.Time
	// Owner is the principal that started the session (tenant.From).
	Owner string

	// storage names the session on disk and in the sandbox (see storageName).
	storage string

	// drv is the interpreter's driver; execMu serialises its requests.
	drv    *driver.Conn
	execMu sync.Mutex
	// snaps are Exec's workspace snapshots (guarded by execMu; changes.go).
	snaps snapshots
	mu    sync.Mutex
	ended bool

	lastActivity time.Time
	executions   int
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

	// ck is the session's checkpoint state (sessionckpt); spare (guarded
	// by mu): a spare interpreter nobody owns yet.
	ck    sessionckpt.State
	spare bool

	// policy is the session's network policy; net (guarded by mu) its
	// interpreter's binding (network.go).
	policy egress.Policy
	net    *engine.Network
	// limits (guarded by mu) is which limits hold for the interpreter and
	// how, as of its start (nil: the sandbox does not say).
	limits *sandbox.Enforcement
}

// Package is one package installed into a session.
type Package struct {
	Language, Name, Version string
}

// exec runs code in the interpreter (driver.Conn.Exec) and counts it as
// an execution and as activity.
// The interpreter's counters are read around the code, where its sandbox
// can (meter): the run's CPU and peak memory are their difference.
func (s *Session) exec(ctx context.Context, code string, timeout, grace time.Duration, lim output.Limits, obs output.Observer) (driver.Outcome, meter) {
	s.touch(false)
	var m meter
	m.before, m.ok = s.drv.Read(true)
	oc := s.drv.Exec(ctx, code, timeout, grace, lim, obs)
	if m.ok {
		m.after, m.ok = s.drv.Read(false)
	}
	s.touch(true)
	return oc, m
}

// meter is two readings of the interpreter's counters, before and after
// one run (ok: both were read).
type meter struct {
	before, after proc.Reading
	ok            bool
}

// touch records activity now and, when ran, one more execution.
func (s *Session) touch(ran bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActivity = time.Now()
	if ran {
		s.executions++
	}
}

// isDead reports whether the interpreter has exited.
func (s *Session) isDead() bool { return s.drv.IsDead() }

// enforced is which limits hold for the interpreter and how (nil: the
// sandbox does not say).
func (s *Session) enforced() *sandbox.Enforcement {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limits
}

// deathReason describes how the interpreter ended.
func (s *Session) deathReason() string { return s.drv.DeathReason() }

// kill stops the interpreter and everything it started.
func (s *Session) kill() { s.drv.Kill() }

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
	// No driver: it died starting (onDeath logs the end).
	status, pid, rss := "dead", 0, int64(0)
	if s.drv != nil {
		pid, rss = s.drv.Pid(), s.drv.RSSKB()
		if !s.drv.IsDead() {
			status = "active"
		}
	}
	pkgs := []string{}
	for _, p := range s.packages {
		pkgs = append(pkgs, p.Name)
	}
	ck := s.ck.Bytes()
	return Info{ID: s.ID, Name: s.Name, Kind: s.Kind, Language: s.Language, Description: s.Description,
		Status: status, StartedAt: s.StartedAt, LastActivity: s.lastActivity, Executions: s.executions,
		Pid: pid, MemoryMB: float64(rss) / 1024, Packages: pkgs, CheckpointBytes: ck}
}

// OpenWorkspace opens the session's workspace for the server to act on
// with the sandbox user's rights (placing uploads, reading artifacts); the
// caller closes it.
func (s *Session) OpenWorkspace() (*files.Root, error) { return s.ws.Open() }

// Writable reports whether the session's code may write its workspace
// (false for a caller's working_dir outside the writable roots).
func (s *Session) Writable() bool { return s.writable }
