package session

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/sessionreg"
)

// live is a Session as sessionckpt reaches it (sessionckpt.Live, whose
// methods document these); they stay off Session's API.
type live Session

func (l *live) Conn() *driver.Conn              { return l.drv }
func (l *live) Workdir() *engine.Workspace      { return l.ws }
func (l *live) Runs() *sync.Mutex               { return &l.execMu }
func (l *live) Checkpoints() *sessionckpt.State { return &l.ck }
func (l *live) Facts() sessionckpt.Facts        { return (*Session)(l).facts() }

// facts is a snapshot of s for its checkpoint record.
func (s *Session) facts() sessionckpt.Facts {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pkgs []string
	for _, p := range s.packages {
		pkgs = append(pkgs, p.Name)
	}
	sort.Strings(pkgs)
	return sessionckpt.Facts{ID: s.ID, Owner: s.Owner, Kind: s.Kind, Language: s.Language, Name: s.Name, Description: s.Description,
		WorkingDir: s.workingDir, Workspace: s.Workspace, Storage: s.storage, StartedAt: s.StartedAt, LastActivity: s.lastActivity,
		Executions: s.executions, Packages: pkgs, Network: s.policy.Allow}
}

// host is the Manager as sessionckpt reaches it (sessionckpt.Host): its
// registry, interpreters and claims; its methods stay off Manager's API.
type host Manager

func (h *host) m() *Manager { return (*Manager)(h) }

// The methods below are sessionckpt.Registry's, Interpreters' and Claims'
// (documented there), over the Manager's registry and its m.mu.

func (h *host) Lookup(ctx context.Context, idOrName string) (*live, *paused, error) {
	s, p, err := h.m().lookup(ctx, idOrName)
	return (*live)(s), p, err
}

func (h *host) Registered(s *live) bool { return h.m().registered((*Session)(s)) }

func (h *host) Reserve(k key, kind string) error {
	return h.m().reserve(k, StartRequest{Kind: kind, resuming: true})
}

func (h *host) Drop(k key) { h.m().drop(k) }

func (h *host) Detach(l *live, p *paused) bool {
	s := (*Session)(l)
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	k := s.key()
	if h.byID[k] != s {
		return false
	}
	delete(h.byID, k)
	if p != nil {
		h.paused[k] = p
	}
	return true
}

func (h *host) Adopt(l *live, f sessionckpt.Facts, p *paused) {
	s := (*Session)(l)
	s.Kind, s.Name, s.Description, s.StartedAt = f.Kind, f.Name, f.Description, f.StartedAt
	s.mu.Lock()
	s.executions, s.ended = f.Executions, false
	s.mu.Unlock()
	h.m().adoptNetwork(s, f.Network)
	k := s.key()
	h.mu.Lock()
	if p != nil {
		delete(h.paused, k)
	}
	h.byID[k] = s
	h.mu.Unlock()
	h.m().logStart(s, execlog.CallContext{})
}

func (h *host) Enlist(p *paused) (*live, *paused) {
	k := sessionckpt.RecordKey(p.Record())
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.byID[k]; s != nil {
		return (*live)(s), nil
	}
	if q := h.paused[k]; q != nil {
		return nil, q
	}
	h.paused[k] = p
	return nil, p
}

func (h *host) Unlist(p *paused) {
	k := sessionckpt.RecordKey(p.Record())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.paused[k] == p {
		delete(h.paused, k)
	}
}

func (h *host) Launch(ctx context.Context, k key, lang, workingDir string, spare bool) (*live, error) {
	s, err := h.m().launchWith(ctx, k, lang, StartRequest{Kind: KindSession, WorkingDir: workingDir}, spare)
	return (*live)(s), err
}

// Rename makes a spare session k: from now on it is that session's
// interpreter (its workspace and package directory keep their names).
func (h *host) Rename(l *live, k key) {
	s := (*Session)(l)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ID, s.Owner, s.storage, s.spare = k.ID, k.Owner, storageName(k), false
	s.StartedAt, s.lastActivity = time.Now().UTC(), time.Now()
}

func (h *host) Terminate(s *live) { h.m().terminate((*Session)(s)) }

func (h *host) Claim(ctx context.Context, k key, lang, kind, name string) error {
	return h.m().claim(ctx, k, lang, StartRequest{Kind: kind, Name: name})
}

func (h *host) Release(k key, kind, name string) {
	if h.deps.Claims != nil {
		h.m().releaseClaims(k, kind, name)
	}
}

func (h *host) Pause(k key, kind, name string) {
	h.deps.Claims.Pause(k.Owner, k.ID)
	if kind == KindContext && name != "" && name != k.ID {
		h.deps.Claims.Pause(k.Owner, name)
	}
}

func (h *host) Standing(ctx context.Context, k key) (sessionreg.Standing, error) {
	return h.deps.Claims.Standing(ctx, k.Owner, k.ID)
}

// isSpare reports whether s is a spare nobody adopted.
func (s *Session) isSpare() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spare
}

var _ sessionckpt.Host[*live] = (*host)(nil)
