package console_test

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/tenant"
)

// memHistory is a small in-memory logindex.Browser for the pages' unit
// tests (the real stores implement the interface in package logindex and
// pgstore and are tested there): it keeps the scope rules the console
// relies on, which is what these tests exercise.
type memHistory struct{ entries []execlog.Entry }

func owner(e execlog.Entry) string {
	if e.Owner == "" {
		return tenant.Local
	}
	return e.Owner
}

func (h *memHistory) sees(ctx context.Context, s logindex.Scope, e execlog.Entry) bool {
	switch {
	case s.All && s.Owner == "":
		return true
	case s.All:
		return owner(e) == s.Owner
	case s.Owner != "":
		return owner(e) == s.Owner
	}
	return owner(e) == tenant.From(ctx)
}

func (h *memHistory) Browse(ctx context.Context, f logindex.Filter) (logindex.Page, error) {
	var rows []logindex.Row
	for _, e := range h.entries {
		if !h.sees(ctx, f.Scope, e) || (f.Text != "" && !strings.Contains(e.Code+e.Stdout+e.Stderr, f.Text)) ||
			(f.Language != "" && e.Language != f.Language) || (f.Tool != "" && e.Tool != f.Tool) {
			continue
		}
		rows = append(rows, logindex.Row{Hit: logindex.Hit{ExecutionID: e.ExecutionID, Language: e.Language, CodePreview: e.Code,
			Status: e.Status, DurationMs: e.DurationMs, ExecutedAt: e.ExecutedAt}, Tool: e.Tool, Owner: owner(e)})
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].ExecutedAt.After(rows[j].ExecutedAt) })
	start, _ := strconv.Atoi(f.Cursor)
	size := f.PageSize()
	p := logindex.Page{Total: len(rows)}
	end := min(len(rows), start+size)
	p.Rows = rows[min(start, len(rows)):end]
	if end < len(rows) {
		p.Next = strconv.Itoa(end)
	}
	return p, nil
}

func (h *memHistory) Inspect(ctx context.Context, id string, s logindex.Scope) (execlog.Entry, error) {
	for _, e := range h.entries {
		if e.ExecutionID == id && h.sees(ctx, s, e) {
			return e, nil
		}
	}
	return execlog.Entry{}, logindex.ErrNotFound
}

func (h *memHistory) Overview(ctx context.Context, w logindex.Window) (logindex.Overview, error) {
	ov := logindex.Overview{Sandboxes: map[string]int{}}
	for t := w.Since; t.Before(w.Until); t = t.Add(w.Bucket) {
		ov.Buckets = append(ov.Buckets, logindex.Bucket{Start: t, ByStatus: map[string]int{}})
	}
	for _, e := range h.entries {
		if !h.sees(ctx, w.Scope, e) || e.ExecutedAt.Before(w.Since) || !e.ExecutedAt.Before(w.Until) {
			continue
		}
		ov.Runs++
		ov.Buckets[int(e.ExecutedAt.Sub(w.Since)/w.Bucket)].ByStatus[e.Status]++
		for _, n := range e.Network {
			if !n.Allowed {
				ov.Denied++
				ov.DeniedHosts = append(ov.DeniedHosts, logindex.HostCount{Host: n.Host, Count: 1})
			}
		}
	}
	return ov, nil
}

// memSessions is an in-memory stand-in for the session manager, keeping
// its tenancy rule (a principal reaches only its own sessions): live
// sessions need interpreters, which the end-to-end test starts for real.
type memSessions struct {
	mu   sync.Mutex
	byID map[string]session.Owned
}

func (m *memSessions) List(ctx context.Context) []session.Info {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []session.Info
	for _, o := range m.byID {
		if o.Owner == tenant.From(ctx) {
			out = append(out, o.Info)
		}
	}
	return out
}

func (m *memSessions) ListAll() []session.Owned {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []session.Owned
	for _, o := range m.byID {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b session.Owned) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (m *memSessions) own(ctx context.Context, id string) (session.Owned, bool) {
	o, ok := m.byID[id]
	return o, ok && o.Owner == tenant.From(ctx)
}

func (m *memSessions) Stop(ctx context.Context, id, _ string, _ bool) (session.CloseInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.own(ctx, id)
	if !ok {
		return session.CloseInfo{}, session.ErrNotFound
	}
	delete(m.byID, id)
	return session.CloseInfo{Info: o.Info}, nil
}

func (m *memSessions) Pause(ctx context.Context, id string) (sessionckpt.PauseInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.own(ctx, id)
	if !ok {
		return sessionckpt.PauseInfo{}, session.ErrNotFound
	}
	o.Status, o.CheckpointBytes = "paused", 100
	m.byID[id] = o
	return sessionckpt.PauseInfo{}, nil
}

func (m *memSessions) CheckpointsEnabled() bool { return true }

func (m *memSessions) has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.byID[id]
	return ok
}

// Values lists the languages and tools scope sees, as the stores'
// logindex.ValueLister does.
func (h *memHistory) Values(ctx context.Context, s logindex.Scope) (logindex.Values, error) {
	var v logindex.Values
	for _, e := range h.entries {
		if h.sees(ctx, s, e) {
			if !slices.Contains(v.Languages, e.Language) {
				v.Languages = append(v.Languages, e.Language)
			}
			if !slices.Contains(v.Tools, e.Tool) {
				v.Tools = append(v.Tools, e.Tool)
			}
		}
	}
	slices.Sort(v.Languages)
	slices.Sort(v.Tools)
	return v, nil
}
