// Package session keeps persistent interpreter sessions: one long-running
// python or node process per session, started under the engine's sandbox
// backend and driven by an embedded driver program over a framed protocol
// (see protocol.go). Sessions (start_session …) and contexts
// (create_context …) are one registry: a context is a session with kind
// "context", an id of the form ctx-<uuid>, a required unique name and a
// description. Either id works with every tool; list_sessions shows both
// kinds (with a kind field) and list_contexts shows both too, in its own
// shape.
//
// Timeouts interrupt the running code (KeyboardInterrupt in python, SIGINT
// in node); if the interpreter answers, the session and its state survive
// and the result says timed_out. If it does not answer within the kill
// grace, the interpreter is killed, the session is closed and the result says
// plainly that its state is lost. A session whose interpreter dies on its
// own (os._exit, segfault, memory limit) stays listed with status "dead"
// until closed; calls to it report how it died.
//
// Every session belongs to the principal (tenant.From) that started it. Ids
// are looked up per principal: another principal's session is "not found"
// exactly like an unknown id, so ids are no oracle, and a caller-chosen id
// may exist once per principal. On-disk names (workspace, package
// directories, session log) carry the owner's tenant.Tag, so such ids never
// collide there either; the local principal keeps the untagged names.
//
// A Manager is safe for concurrent use: calls to one session are serialized,
// different sessions run in parallel.
package session

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/inflight"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// Options configure a Manager. Zero values: MaxSessions 0 means 5,
// MaxPerPrincipal 0 means MaxSessions, IdleTimeout 0 disables the idle
// reaper, KillGrace 0 means 5 s.
type Options struct {
	MaxSessions int
	// MaxPerPrincipal bounds the live sessions of one principal, so one
	// tenant cannot take every slot.
	MaxPerPrincipal int
	IdleTimeout     time.Duration
	KillGrace       time.Duration
	// DefaultTimeout is an Exec's timeout when the request gives none.
	DefaultTimeout time.Duration
	// Output bounds the stdout and stderr an Exec returns.
	Output output.Limits
	// PackagesDir holds each session's installed packages (a directory per
	// session, removed with it).
	PackagesDir string
	// SandboxMode names the isolation mode in results and logs.
	SandboxMode string
	// Checkpoints configure pause, resume, fork and automatic checkpoints
	// (with Deps.Checkpoints set).
	Checkpoints sessionckpt.Options
}

// Deps are what a Manager runs on, made by the caller (the app).
type Deps struct {
	// Engine makes workspaces and starts the interpreters on its run path.
	Engine *engine.Engine
	// Languages are the interpreters sessions run.
	Languages *runtime.Set
	// Log is the execution log (sessions write their own files there); nil
	// logs nothing.
	Log *execlog.Logger
	// Journal records sessions, runs and directories in flight; nil
	// records nothing.
	Journal *inflight.Journal
	// Claims records which replica holds each session id and context name
	// when replicas share a session registry; nil: this process is alone.
	Claims Claims
	// Checkpoints keeps session checkpoints (pause, resume, fork,
	// automatic checkpoints); nil: sessions end with their interpreter.
	Checkpoints checkpoint.Blobs
	// Egress checks a restored session's network policy against its
	// owner's ceiling; nil: egress is off.
	Egress *egress.Service
}

// Claims is the session registry as the Manager uses it: a session (and a
// context's name) is claimed before its interpreter starts and released
// when it ends. Keys are per principal, like the Manager's own.
type Claims interface {
	// Claim fails when another replica holds (or held) idOrName of
	// principal p: the session must not be created here. l describes the
	// session to other replicas' listings.
	Claim(ctx context.Context, p, idOrName string, l sessionreg.Label) error
	// Release forgets a claim; it never fails the caller.
	Release(p, idOrName string)
	// Pause marks a claim paused: no replica holds it, and the next Claim
	// (by any replica) takes it. It never fails the caller.
	Pause(p, idOrName string)
	// Standing is where principal p's idOrName stands for this replica.
	Standing(ctx context.Context, p, idOrName string) (sessionreg.Standing, error)
}

// ErrNotFound is wrapped by the error for an unknown session or context id
// (notFound).
var ErrNotFound = errcode.New(errcode.SessionNotFound, "unknown session")

// notFound is the error for idOrName when no session of the caller has it:
// it says where the live ones are listed.
func notFound(idOrName string) error {
	return fmt.Errorf("%w: %s (list_sessions shows the live ones)", ErrNotFound, idOrName)
}

// ErrFull is returned when CODEXEC_MAX_SESSIONS interpreters are running.
var ErrFull = errcode.New(errcode.LimitExceeded, "session limit reached")

// Manager owns every session. Create it with NewManager; Close stops all.
type Manager struct {
	eng  *engine.Engine
	deps Deps
	opts Options
	mu   sync.Mutex
	byID map[key]*Session
	// paused holds the sessions without a process, ck their checkpoints
	// (nil: no checkpoints; checkpoints.go).
	paused map[key]*paused
	ck     *sessionckpt.Checkpointer[*live]
	stop   chan struct{}
	once   sync.Once
	// openMu serializes creations through Open (callerid.go).
	openMu sync.Mutex
}

// key identifies a session: its id within its owner's namespace.
type key = sessionckpt.Key

func (s *Session) key() key { return key{Owner: s.Owner, ID: s.ID} }

// NewManager returns a Manager running sessions through deps.Engine.
func NewManager(deps Deps, opts Options) *Manager {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 5
	}
	if opts.MaxPerPrincipal <= 0 || opts.MaxPerPrincipal > opts.MaxSessions {
		opts.MaxPerPrincipal = opts.MaxSessions
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 5 * time.Second
	}
	m := &Manager{eng: deps.Engine, deps: deps, opts: opts, byID: map[key]*Session{}, paused: map[key]*paused{},
		stop: make(chan struct{})}
	if deps.Checkpoints != nil {
		m.startCheckpoints()
	}
	if opts.IdleTimeout > 0 {
		go m.reapIdle()
	}
	return m
}

// StartRequest describes a new session or context.
type StartRequest struct {
	// ID is a caller-chosen id (see Open); empty means a generated one.
	ID          string
	Kind        string
	Language    string
	Name        string
	Description string
	WorkingDir  string
	Call        execlog.CallContext
	// Network is the session's network policy, already resolved within
	// the caller's ceiling; zero: none.
	Network egress.Policy
	// resuming: the slot is for a paused session coming back (its id is
	// taken by itself).
	resuming bool
}

// Start launches an interpreter owned by ctx's principal and registers it.
func (m *Manager) Start(ctx context.Context, req StartRequest) (info Info, retErr error) {
	lang, err := runtime.Normalize(req.Language)
	if err != nil || (lang != runtime.Python && lang != runtime.Node) {
		return Info{}, errcode.New(errcode.InvalidParams, "sessions support python and node/javascript, not %q", req.Language)
	}
	if err := m.eng.LanguageError(lang); err != nil {
		return Info{}, errcode.New(errcode.InvalidParams, "%s is unavailable on this server: %w", lang, err)
	}
	id := req.ID
	if id == "" {
		id = newID(req.Kind)
	} else if err := ValidateID(id); err != nil {
		return Info{}, err
	}
	k := key{Owner: tenant.From(ctx), ID: id}
	if err := m.reserve(k, req); err != nil {
		return Info{}, err
	}
	defer func() {
		if retErr != nil {
			m.drop(k)
		}
	}()
	if err := m.claim(ctx, k, lang, req); err != nil {
		return Info{}, err
	}
	defer func() {
		if retErr != nil && m.deps.Claims != nil {
			m.releaseClaims(k, req.Kind, req.Name)
		}
	}()
	s, err := m.launch(ctx, k, lang, req)
	if err != nil {
		return Info{}, err
	}
	m.mu.Lock()
	m.byID[k] = s
	m.mu.Unlock()
	m.logStart(s, req.Call)
	return s.info(), nil
}

// reserve checks the global and per-principal limits and name uniqueness
// (per principal) and holds a slot for k.
func (m *Manager) reserve(k key, req StartRequest) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, taken := m.byID[k]; taken {
		return fmt.Errorf("session %q %w", k.ID, ErrExists)
	}
	if p := m.paused[k]; p != nil && !req.resuming {
		return fmt.Errorf("session %q %w (paused)", k.ID, ErrExists)
	}
	if err := m.pausedNameTaken(k, req); err != nil {
		return err
	}
	live, mine := 0, 0
	for sk, s := range m.byID {
		if s != nil && s.isDead() {
			continue
		}
		live++
		if sk.Owner != k.Owner {
			continue
		}
		mine++
		if s != nil && req.Name != "" && s.Kind == KindContext && req.Kind == KindContext && s.Name == req.Name {
			return errcode.New(errcode.InvalidContextName, "a context named %q already exists (%s)", req.Name, s.ID)
		}
	}
	if live >= m.opts.MaxSessions {
		return fmt.Errorf("%w: %d interpreters are running (CODEXEC_MAX_SESSIONS=%d); close one first", ErrFull, live, m.opts.MaxSessions)
	}
	if mine >= m.opts.MaxPerPrincipal {
		return fmt.Errorf("%w: you have %d interpreters running (CODEXEC_MAX_SESSIONS_PER_PRINCIPAL=%d); close one first", ErrFull, mine, m.opts.MaxPerPrincipal)
	}
	m.byID[k] = nil
	return nil
}

// drop removes k from the Manager and releases its claims.
func (m *Manager) drop(k key) {
	m.mu.Lock()
	s := m.byID[k]
	delete(m.byID, k)
	m.mu.Unlock()
	if s != nil && m.deps.Claims != nil {
		m.releaseClaims(k, s.Kind, s.Name)
	}
}

// claim claims k's id, and a context's name, in the registry shared by
// replicas; on a failure it releases what it claimed.
func (m *Manager) claim(ctx context.Context, k key, lang string, req StartRequest) (retErr error) {
	c := m.deps.Claims
	if c == nil {
		return nil
	}
	l := sessionreg.Label{Kind: req.Kind, Language: lang, Name: req.Name}
	if err := c.Claim(ctx, k.Owner, k.ID, l); err != nil {
		return fmt.Errorf("session %q cannot start on this replica: %w", k.ID, err)
	}
	defer func() {
		if retErr != nil {
			c.Release(k.Owner, k.ID)
		}
	}()
	if req.Kind == KindContext && req.Name != "" && req.Name != k.ID {
		l.Of = k.ID
		if err := c.Claim(ctx, k.Owner, req.Name, l); err != nil {
			return fmt.Errorf("a context named %q already exists on another replica: %w", req.Name, err)
		}
	}
	return nil
}

// releaseClaims releases what claim claimed for k.
func (m *Manager) releaseClaims(k key, kind, name string) {
	m.deps.Claims.Release(k.Owner, k.ID)
	if kind == KindContext && name != "" && name != k.ID {
		m.deps.Claims.Release(k.Owner, name)
	}
}

// registered reports whether s is still the live registry entry for its key.
func (m *Manager) registered(s *Session) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.byID[s.key()] == s
}

// storageName is the on-disk name of a session: its id, suffixed with the
// owner's tenant.Tag for principals other than Local.
func storageName(k key) string {
	if tag := tenant.Tag(k.Owner); tag != "" {
		return k.ID + "@" + tag
	}
	return k.ID
}

func newID(kind string) string {
	if kind == KindContext {
		return "ctx-" + rand.Text()[:8] + "-" + rand.Text()[:4]
	}
	return execlog.NewID("sess_")
}

// launch creates the workspace and starts the driver, waiting for it to be
// ready.
func (m *Manager) launch(ctx context.Context, k key, lang string, req StartRequest) (*Session, error) {
	return m.launchWith(ctx, k, lang, req, false)
}

// launchWith is launch; spare marks a spare interpreter (sessionckpt spares).
func (m *Manager) launchWith(ctx context.Context, k key, lang string, req StartRequest, spare bool) (_ *Session, retErr error) {
	ws, err := m.eng.Workspace(ctx, storageName(k), req.WorkingDir)
	if err != nil {
		return nil, err
	}
	s := &Session{ID: k.ID, Owner: k.Owner, storage: storageName(k), Name: req.Name, Kind: req.Kind, Language: lang, Description: req.Description,
		Workspace: ws.Dir.Path, StartedAt: time.Now().UTC(), lastActivity: time.Now(),
		pkgDirs: map[string]string{}, writable: ws.Dir.Writable, ws: ws, workingDir: req.WorkingDir, policy: req.Network}
	s.pkgBase, s.spare = filepath.Join(m.opts.PackagesDir, s.storage), spare
	defer func() {
		if retErr != nil {
			ws.Close()
			m.removeDir(m.packagesBase(s))
		}
	}()
	if err := m.startDriver(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

// startDriver starts s's interpreter in its sandbox and waits until it is
// ready.
func (m *Manager) startDriver(ctx context.Context, s *Session) error {
	searchPath, mounts, err := m.packageDirs(s)
	if err != nil {
		return err
	}
	launch := func(ctx context.Context, argv []string, stdin *os.File, stdout, stderr io.Writer) (sandbox.Process, error) {
		p, limits, err := m.eng.StartProcess(ctx, engine.StartRequest{ID: s.storage, Argv: argv, Lang: s.Language, Workspace: s.ws,
			SearchPath: searchPath, Mounts: mounts, Stdin: stdin, Stdout: stdout, Stderr: stderr, Network: m.bindNetwork(s)})
		s.mu.Lock()
		s.limits = limits
		s.mu.Unlock()
		return p, err
	}
	drv, err := driver.Start(ctx, s.Language, m.deps.Languages.Get(s.Language).Path, launch, func(c *driver.Conn) { m.onDeath(s, c) })
	if err != nil {
		return err
	}
	s.mu.Lock() // onDeath may read it (logEnd, info) from now on
	s.drv = drv
	s.mu.Unlock()
	return nil
}

// packageDirs creates the session's package directories (empty until
// install_package fills them) and returns the search-path entries that put
// them first on the import path plus read-only mounts for isolated
// backends.
func (m *Manager) packageDirs(s *Session) ([]string, []sandbox.Mount, error) {
	base := m.packagesBase(s)
	py, node := filepath.Join(base, "python"), filepath.Join(base, "node")
	m.deps.Journal.DirCreated(base)
	for _, d := range []string{py, filepath.Join(node, "node_modules")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	s.pkgDirs["python"], s.pkgDirs["node"] = py, node
	searchPath := []string{"PYTHONPATH=" + py, "NODE_PATH=" + filepath.Join(node, "node_modules")}
	return searchPath, []sandbox.Mount{{Host: base, Target: base, ReadOnly: true}}, nil
}

// packagesBase is the directory of s's installed packages (named when
// its interpreter started: a spare's keeps its name once adopted).
func (m *Manager) packagesBase(s *Session) string {
	return s.pkgBase
}

// removeDir removes a directory the session made and records its removal.
func (m *Manager) removeDir(dir string) {
	if err := os.RemoveAll(dir); err == nil {
		m.deps.Journal.DirRemoved(dir)
	}
}

// Get returns ctx's principal's session with the given id, or its context
// with that unique name (clients pass a context's name where its id is
// asked for). Another principal's session is ErrNotFound. A paused
// session is resumed first (its report waits for the next Exec).
func (m *Manager) Get(ctx context.Context, idOrName string) (*Session, error) {
	s, p, err := m.lookup(ctx, idOrName)
	if err != nil || s != nil {
		return s, err
	}
	return m.resumePaused(ctx, p)
}

// Here reports whether this Manager has ctx's principal's session
// idOrName, live or paused, without resuming it or asking a shared store.
func (m *Manager) Here(ctx context.Context, idOrName string) bool {
	_, _, err := m.lookupHere(tenant.From(ctx), idOrName)
	return err == nil
}

// lookup finds ctx's principal's session idOrName, live (s) or paused (p):
// here, else, when replicas share paused sessions, in the shared records.
func (m *Manager) lookup(ctx context.Context, idOrName string) (*Session, *paused, error) {
	s, p, err := m.lookupHere(tenant.From(ctx), idOrName)
	if errors.Is(err, ErrNotFound) && m.shared() {
		return m.fetchPaused(ctx, tenant.From(ctx), idOrName)
	}
	return s, p, err
}

// lookupHere finds owner's session idOrName in this Manager.
func (m *Manager) lookupHere(owner, idOrName string) (*Session, *paused, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.byID[key{Owner: owner, ID: idOrName}]; s != nil {
		return s, nil, nil
	}
	if p := m.paused[key{Owner: owner, ID: idOrName}]; p != nil {
		return nil, p, nil
	}
	for k, s := range m.byID {
		if s != nil && k.Owner == owner && s.Name == idOrName && s.Name != "" {
			return s, nil, nil
		}
	}
	for k, p := range m.paused {
		if name := p.Record().Name; k.Owner == owner && name == idOrName && name != "" {
			return nil, p, nil
		}
	}
	return nil, nil, notFound(idOrName)
}

// List returns the sessions of ctx's principal, newest first.
func (m *Manager) List(ctx context.Context) []Info {
	owner := tenant.From(ctx)
	var mine []*Session
	for _, s := range m.all() {
		if s.Owner == owner {
			mine = append(mine, s)
		}
	}
	all := append(infos(mine), m.pausedInfos(owner)...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartedAt.After(all[j].StartedAt) })
	return all
}

// Owned is a session with the principal that owns it.
type Owned struct {
	Owner string
	Info
}

// ListAll returns every principal's sessions held here, newest first:
// for an operator's view (the console), never for a tool, whose caller
// sees only its own (List).
func (m *Manager) ListAll() []Owned {
	var out []Owned
	for _, s := range m.all() {
		out = append(out, Owned{Owner: s.Owner, Info: s.info()})
	}
	out = append(out, m.pausedAll()...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out
}

// all returns every registered session of every principal.
func (m *Manager) all() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	var all []*Session
	for _, s := range m.byID {
		if s != nil {
			all = append(all, s)
		}
	}
	return all
}

func infos(all []*Session) []Info {
	out := make([]Info, 0, len(all))
	for _, s := range all {
		out = append(out, s.info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out
}

// CloseInfo summarises a closed session.
type CloseInfo struct {
	Info
	DurationTotal time.Duration
}

// Stop stops the interpreter, removes the session and its workspace, and
// logs session_end with reason. With waitRunning (stop_context) running
// code may finish first; without it (close_session, idle reaping, shutdown) the interpreter is killed at once and the running call
// reports that the session is gone. A paused session is closed without
// being resumed; either way its checkpoint is removed.
func (m *Manager) Stop(ctx context.Context, idOrName, reason string, waitRunning bool) (CloseInfo, error) {
	s, p, err := m.lookup(ctx, idOrName)
	if err != nil {
		return CloseInfo{}, err
	}
	if p != nil {
		return m.closePaused(p, reason)
	}
	return m.stopSession(s, reason, waitRunning), nil
}

func (m *Manager) stopSession(s *Session, reason string, waitRunning bool) CloseInfo {
	if !waitRunning {
		m.logEnd(s, reason)
		m.drop(s.key())
		m.terminate(s)
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	m.drop(s.key())
	m.terminate(s)
	if m.checkpoints() {
		m.ck.Discard((*live)(s))
	}
	ci := CloseInfo{Info: s.info(), DurationTotal: time.Since(s.StartedAt)}
	m.logEnd(s, reason)
	return ci
}

// terminate stops the interpreter and frees its directories.
func (m *Manager) terminate(s *Session) {
	s.drv.Close(500 * time.Millisecond)
	s.closeNetwork()
	s.ws.Close()
	m.removeDir(m.packagesBase(s))
}

// onDeath logs a session whose interpreter c died on its own (a spare's
// death is no session's: takeSpare skips it). It may come before
// startDriver has set s.drv: it reads c.
func (m *Manager) onDeath(s *Session, c *driver.Conn) {
	if s.isSpare() {
		return
	}
	slog.Warn("session interpreter died", "session_id", s.ID, "reason", c.DeathReason())
	m.logEnd(s, "died: "+c.DeathReason())
}

// Close stops every session (server shutdown or client disconnect). With
// checkpoints, each live session is paused instead, so that the next
// server resumes it; a session that cannot be paused is stopped.
func (m *Manager) Close() {
	m.once.Do(func() { close(m.stop) })
	if m.checkpoints() {
		m.ck.Close()
	}
	for _, s := range m.all() {
		if m.checkpoints() && m.ck.PauseAtShutdown((*live)(s)) {
			continue
		}
		m.stopSession(s, "server_shutdown", false)
	}
}

func (m *Manager) reapIdle() {
	tick := time.NewTicker(min(m.opts.IdleTimeout/4+time.Millisecond, 10*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-tick.C:
		}
		for _, s := range m.all() {
			if time.Since(s.info().LastActivity) >= m.opts.IdleTimeout {
				m.idle(s)
			}
		}
	}
}
