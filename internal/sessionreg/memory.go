package sessionreg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is the in-process Registry of the embedded server. Its zero value
// is ready to use.
type Memory struct {
	mu       sync.Mutex
	sessions map[string]Owner
	replicas map[string]lease
}

type lease struct {
	r    Replica
	seen time.Time
}

var _ Registry = (*Memory)(nil)

// Heartbeat implements Registry.
func (m *Memory) Heartbeat(_ context.Context, r Replica, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.replicas == nil {
		m.replicas = map[string]lease{}
	}
	m.replicas[r.ID] = lease{r: r, seen: at.UTC()}
	return nil
}

// Claim implements Registry.
func (m *Memory) Claim(_ context.Context, c Owner) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.sessions[c.SessionID]; ok && (o.PausedAt == nil || o.LostAt != nil) {
		if o.Replica.ID != c.Replica.ID || o.LostAt != nil {
			return fmt.Errorf("%w: %s", ErrClaimed, c.SessionID)
		}
		return nil
	}
	if m.sessions == nil {
		m.sessions = map[string]Owner{}
	}
	c.ClaimedAt, c.LostAt, c.PausedAt = c.ClaimedAt.UTC(), nil, nil
	m.sessions[c.SessionID] = c
	return nil
}

// List implements Registry.
func (m *Memory) List(_ context.Context, prefix string) ([]Owner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Owner{}
	for id, o := range m.sessions {
		if strings.HasPrefix(id, prefix) {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b Owner) int { return strings.Compare(a.SessionID, b.SessionID) })
	return out, nil
}

// Owner implements Registry.
func (m *Memory) Owner(_ context.Context, sessionID string) (Owner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.sessions[sessionID]
	if !ok {
		return Owner{}, fmt.Errorf("%w: %s", ErrNotFound, sessionID)
	}
	return o, nil
}

// Release implements Registry.
func (m *Memory) Release(_ context.Context, sessionID, replicaID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.sessions[sessionID]; ok && o.Replica.ID == replicaID && o.LostAt == nil && o.PausedAt == nil {
		delete(m.sessions, sessionID)
	}
	return nil
}

// Pause implements Registry.
func (m *Memory) Pause(_ context.Context, sessionID, replicaID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.sessions[sessionID]; ok && o.Replica.ID == replicaID && o.LostAt == nil && o.PausedAt == nil {
		at = at.UTC()
		o.PausedAt = &at
		m.sessions[sessionID] = o
	}
	return nil
}

// MarkLost implements Registry.
func (m *Memory) MarkLost(_ context.Context, replicaID string, at time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	at = at.UTC()
	n := 0
	for id, o := range m.sessions {
		if o.Replica.ID == replicaID && o.LostAt == nil && o.PausedAt == nil {
			o.LostAt = &at
			m.sessions[id] = o
			n++
		}
	}
	delete(m.replicas, replicaID)
	return n, nil
}

// ForgetLost implements Registry.
func (m *Memory) ForgetLost(_ context.Context, before time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for id, o := range m.sessions {
		if o.LostAt != nil && o.LostAt.Before(before) {
			delete(m.sessions, id)
			n++
		}
	}
	return n, nil
}

// Expired implements Registry.
func (m *Memory) Expired(_ context.Context, now time.Time, lease time.Duration) ([]Replica, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Replica{}
	for _, l := range m.replicas {
		if l.seen.Before(now.Add(-lease)) {
			out = append(out, l.r)
		}
	}
	slices.SortFunc(out, func(a, b Replica) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
