package storetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/tenant"
	gocmp "github.com/google/go-cmp/cmp"
)

const bob = "bob@example.com"

// browseHistory is history with what the console lists too: tools, end
// reasons, sandboxes, and a third principal.
func browseHistory(base time.Time) []execlog.Entry {
	tools := []string{"execute_code", "execute_command", "run_script"}
	sandboxes := []string{"warm", "forked", "cold", ""}
	out := history(base)
	for i := range out {
		e := &out[i]
		e.Tool, e.EndReason = tools[i%3], "exit"
		if s := sandboxes[i%4]; s != "" {
			e.Usage = &execlog.Usage{Sandbox: s}
		}
		if i%5 == 2 {
			e.Owner = bob
		}
		if i%10 == 3 {
			e.Network = append(e.Network, e.Network...) // the same refusals again: counted once
		}
	}
	return out
}

// model is what every store must answer, computed from the entries
// themselves: their Fields and the ordering keys they get (the next free
// one in append order).
type model struct {
	entries []execlog.Entry
	fields  []logindex.Fields
}

func newModel(entries []execlog.Entry) model {
	m := model{entries: entries}
	taken := map[int64]bool{}
	for _, e := range entries {
		f, _ := logindex.FieldsOf(e)
		for taken[f.Key] {
			f.Key++
		}
		taken[f.Key] = true
		m.fields = append(m.fields, f)
	}
	return m
}

// rows are the expected rows of the executions owner (all: everyone)
// sees that keep, newest first.
func (m model) rows(owner string, all bool, keep func(e execlog.Entry, f logindex.Fields) bool) []logindex.Row {
	var idx []int
	for i, f := range m.fields {
		if (all || f.Owner == owner) && keep(m.entries[i], f) {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(m.fields[b].Key, m.fields[a].Key) })
	out := []logindex.Row{}
	for _, i := range idx {
		f := m.fields[i]
		out = append(out, logindex.Row{Hit: f.Hit, Tool: f.Tool, Owner: f.Owner, EndReason: f.EndReason,
			Sandbox: f.Sandbox, Denied: len(f.DeniedHosts)})
	}
	return out
}

func any_(execlog.Entry, logindex.Fields) bool { return true }

func none(execlog.Entry, logindex.Fields) bool { return false }

// browseCases are the listings every store must give; owner is ctx's
// principal, want the model's filter.
func browseCases(base time.Time) []struct {
	name  string
	owner string
	f     logindex.Filter
	want  func(e execlog.Entry, f logindex.Fields) bool
	min   int
} {
	since, until := base.AddDate(0, 0, -12), base.AddDate(0, 0, -3)
	in := func(from, to time.Time) func(execlog.Entry, logindex.Fields) bool {
		return func(_ execlog.Entry, f logindex.Fields) bool {
			return (from.IsZero() || f.Key >= logindex.TimeKey(from)) && (to.IsZero() || f.Key < logindex.TimeKey(to))
		}
	}
	return []struct {
		name  string
		owner string
		f     logindex.Filter
		want  func(e execlog.Entry, f logindex.Fields) bool
		min   int
	}{
		{"own", "", logindex.Filter{}, any_, 50},
		{"own, another principal", alice, logindex.Filter{}, any_, 20},
		{"an owner named", "", logindex.Filter{Scope: logindex.Scope{Owner: bob}}, any_, 20},
		{"all", "", logindex.Filter{Scope: logindex.Scope{All: true}}, any_, 150},
		{"all, one owner", alice, logindex.Filter{Scope: logindex.Scope{All: true, Owner: bob}}, any_, 20},
		{"language", "", logindex.Filter{Query: logindex.Query{Language: "bash"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return f.Language == "bash" }, 5},
		{"status", "", logindex.Filter{Query: logindex.Query{Status: "failed"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return f.Status == "failed" }, 5},
		{"all, status and language", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{Status: "success", Language: "python"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return f.Status == "success" && f.Language == "python" }, 5},
		{"tool", "", logindex.Filter{Tool: "run_script"},
			func(e execlog.Entry, _ logindex.Fields) bool { return e.Tool == "run_script" }, 10},
		{"all, tool", "", logindex.Filter{Scope: logindex.Scope{All: true}, Tool: "execute_command"},
			func(e execlog.Entry, _ logindex.Fields) bool { return e.Tool == "execute_command" }, 30},
		{"session", "", logindex.Filter{SessionID: "sess_1"},
			func(e execlog.Entry, _ logindex.Fields) bool { return e.SessionID != nil && *e.SessionID == "sess_1" }, 2},
		{"all, session", "", logindex.Filter{Scope: logindex.Scope{All: true}, SessionID: "sess_0"},
			func(e execlog.Entry, _ logindex.Fields) bool { return e.SessionID != nil && *e.SessionID == "sess_0" }, 2},
		{"since and until", "", logindex.Filter{Query: logindex.Query{Since: since}, Until: until}, in(since, until), 10},
		{"until", "", logindex.Filter{Until: until}, in(time.Time{}, until), 40},
		{"text", "", logindex.Filter{Query: logindex.Query{Text: "pandas"}},
			func(e execlog.Entry, _ logindex.Fields) bool { return strings.Contains(e.Code, "pandas") }, 5},
		{"all, text, tool and until", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{Text: "print"},
			Tool: "execute_code", Until: until},
			func(e execlog.Entry, f logindex.Fields) bool {
				return strings.Contains(e.Code, "print") && e.Tool == "execute_code" && f.Key < logindex.TimeKey(until)
			}, 5},
		{"all, denied host", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{DeniedHost: "evil.example"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return slices.Contains(f.DeniedHosts, "evil.example") }, 15},
		{"all, language", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{Language: "node"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return f.Language == "node" }, 20},
		{"all, status", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{Status: "timeout"}},
			func(_ execlog.Entry, f logindex.Fields) bool { return f.Status == "timeout" }, 10},
		{"all, language in other case", "", logindex.Filter{Scope: logindex.Scope{All: true}, Query: logindex.Query{Language: "Node"}}, none, 0},
		{"all, tool in other case", "", logindex.Filter{Scope: logindex.Scope{All: true}, Tool: "Run_Script"}, none, 0},
		{"text, tool in other case", "", logindex.Filter{Query: logindex.Query{Text: "print"}, Tool: "Run_Script"}, none, 0},
		{"text, tool", "", logindex.Filter{Query: logindex.Query{Text: "print"}, Tool: "run_script"},
			func(e execlog.Entry, _ logindex.Fields) bool {
				return strings.Contains(e.Code, "print") && e.Tool == "run_script"
			}, 3},
		{"nothing", "", logindex.Filter{Tool: "no_such_tool"}, none, 0},
	}
}

// walk lists every page of f, 7 rows a page, checking each page's total.
func walk(t *testing.T, ctx context.Context, b logindex.Browser, f logindex.Filter, total int) []logindex.Row {
	t.Helper()
	f.Limit = 7
	rows := []logindex.Row{}
	for pages := 0; ; pages++ {
		p, err := b.Browse(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if p.Total != total {
			t.Errorf("page %d: total %d, want %d", pages, p.Total, total)
		}
		if len(p.Rows) > 7 || (p.Next != "" && len(p.Rows) != 7) || pages > 50 {
			t.Fatalf("page %d: %d rows, next %q", pages, len(p.Rows), p.Next)
		}
		rows = append(rows, p.Rows...)
		if p.Next == "" {
			return rows
		}
		f.Cursor = p.Next
	}
}

// TestBrowse lists the same executions page by page in every store under
// each scope and filter and requires the rows the entries themselves
// give: all of them, once each, newest first.
func TestBrowse(t *testing.T) {
	base := time.Now()
	entries := browseHistory(base)
	m := newModel(entries)
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			b := loadBrowser(t, bk, entries)
			for _, c := range browseCases(base) {
				owner, all := c.f.Resolve(ownerCtx(c.owner))
				want := m.rows(tenantOwner(owner), all, c.want)
				got := walk(t, ownerCtx(c.owner), b, c.f, len(want))
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("%s: rows differ (-want +got)\n%s", c.name, diff)
				}
				if len(want) < c.min {
					t.Errorf("%s: %d rows, want at least %d (the case is not vacuous)", c.name, len(want), c.min)
				}
			}
		})
	}
}

func tenantOwner(o string) string {
	if o == "" {
		return tenant.Local
	}
	return o
}

// loadBrowser appends entries to a fresh store of bk: one by one to the
// embedded one, and to PostgreSQL a few one by one then all of them in a
// batch (the recorded ones ignored, as Append ignores them).
func loadBrowser(t *testing.T, bk backend, entries []execlog.Entry) logindex.Browser {
	t.Helper()
	st := bk.open(t)
	ctx := context.Background()
	if st.pg == nil {
		for _, e := range entries {
			if err := st.history.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		return st.browser
	}
	for _, e := range entries[:10] {
		if err := st.pg.Append(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.pg.AppendBatch(ctx, entries); err != nil {
		t.Fatal(err)
	}
	return st.browser
}

// TestBrowseRejects: a bad filter or cursor is ErrInvalidQuery in every
// store.
func TestBrowseRejects(t *testing.T) {
	bad := []logindex.Filter{
		{Cursor: "garbage"}, {Cursor: "k1.!!"}, {Cursor: "k1.-5"}, {Cursor: "k1."}, {Cursor: "K1.abc"},
		{Query: logindex.Query{Status: "weird"}}, {Query: logindex.Query{Text: "!!!"}},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			b := loadBrowser(t, bk, browseHistory(time.Now())[:20])
			for _, f := range bad {
				if _, err := b.Browse(context.Background(), f); !errors.Is(err, logindex.ErrInvalidQuery) {
					t.Errorf("%+v: err %v, want an invalid query", f, err)
				}
			}
		})
	}
}

// TestInspect: one execution is found within scope only; out of scope it
// is not found, exactly like an unknown id.
func TestInspect(t *testing.T) {
	entries := browseHistory(time.Now())
	local, ofAlice := entries[1], entries[5] // owners: local, alice
	cases := []struct {
		name  string
		owner string
		scope logindex.Scope
		id    string
		found bool
	}{
		{"own", "", logindex.Scope{}, local.ExecutionID, true},
		{"own, a tenant", alice, logindex.Scope{}, ofAlice.ExecutionID, true},
		{"another principal's", "", logindex.Scope{}, ofAlice.ExecutionID, false},
		{"the local principal's, to a tenant", alice, logindex.Scope{}, local.ExecutionID, false},
		{"all", bob, logindex.Scope{All: true}, ofAlice.ExecutionID, true},
		{"all, its owner named", bob, logindex.Scope{All: true, Owner: alice}, ofAlice.ExecutionID, true},
		{"all, another owner named", "", logindex.Scope{All: true, Owner: bob}, ofAlice.ExecutionID, false},
		{"unknown", "", logindex.Scope{All: true}, "exec_nope", false},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			b := loadBrowser(t, bk, entries)
			for _, c := range cases {
				e, err := b.Inspect(ownerCtx(c.owner), c.id, c.scope)
				switch {
				case c.found && (err != nil || e.ExecutionID != c.id || e.Code == ""):
					t.Errorf("%s: %s, err %v; want it", c.name, e.ExecutionID, err)
				case !c.found && !errors.Is(err, logindex.ErrNotFound):
					t.Errorf("%s: err %v, want not found", c.name, err)
				}
			}
		})
	}
}

// overview is the Overview the model gives for w (normalized) and scope.
func (m model) overview(w logindex.Window, owner string, all bool) logindex.Overview {
	o := logindex.NewOverview(w)
	from, until, bucket := w.Keys()
	var durations []int64
	hosts := map[string]int{}
	for i, f := range m.fields {
		if (!all && f.Owner != owner) || f.Key < from || f.Key >= until {
			continue
		}
		o.Add((f.Key-from)/bucket, f.Status, f.Sandbox, 1, len(f.DeniedHosts))
		durations = append(durations, m.entries[i].DurationMs)
		for _, h := range f.DeniedHosts {
			hosts[h]++
		}
	}
	if len(durations) > 0 {
		slices.Sort(durations)
		p50, p90 := logindex.PercentileRanks(len(durations))
		o.P50, o.P90 = time.Duration(durations[p50-1])*time.Millisecond, time.Duration(durations[p90-1])*time.Millisecond
	}
	for h, n := range hosts {
		o.DeniedHosts = append(o.DeniedHosts, logindex.HostCount{Host: h, Count: n})
	}
	slices.SortFunc(o.DeniedHosts, func(a, b logindex.HostCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Host, b.Host))
	})
	o.DeniedHosts = o.DeniedHosts[:min(len(o.DeniedHosts), logindex.TopHosts)]
	return o
}

// TestOverview summarises windows of the same executions in every store
// and requires what the entries themselves give: runs per bucket and
// status, percentiles, sandboxes, refusals and the most refused hosts.
func TestOverview(t *testing.T) {
	base := time.Now().UTC()
	entries := browseHistory(base)
	// Refusals of hosts beyond TopHosts, so the list is cut.
	for i := range 14 {
		entries[i*3].Network = append(entries[i*3].Network, browseHost(i%12), browseHost((i+1)%12))
	}
	m := newModel(entries)
	cases := []struct {
		name  string
		owner string
		w     logindex.Window
		runs  int
	}{
		{"own, a day by the hour", "", logindex.Window{Since: base.Add(-24 * time.Hour), Until: base.Add(time.Minute)}, 1},
		{"own, default window", "", logindex.Window{}, 1},
		{"all, a week by the hour", "", logindex.Window{Scope: logindex.Scope{All: true}, Since: base.AddDate(0, 0, -7), Until: base.Add(time.Minute)}, 20},
		{"all, a month by the day", "", logindex.Window{Scope: logindex.Scope{All: true}, Since: base.AddDate(0, 0, -40),
			Until: base.Add(time.Minute), Bucket: 24 * time.Hour}, 150},
		{"all, one owner, a month", "", logindex.Window{Scope: logindex.Scope{All: true, Owner: alice}, Since: base.AddDate(0, 0, -40),
			Until: base.Add(time.Minute), Bucket: 6 * time.Hour}, 20},
		{"a tenant's own", bob, logindex.Window{Since: base.AddDate(0, 0, -40), Until: base.Add(time.Minute), Bucket: 24 * time.Hour}, 20},
		{"empty", "", logindex.Window{Since: base.AddDate(-1, 0, 0), Until: base.AddDate(-1, 0, 1)}, 0},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			b := loadBrowser(t, bk, entries)
			for _, c := range cases {
				ctx := ownerCtx(c.owner)
				got, err := b.Overview(ctx, c.w)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				w, _ := c.w.Normalize(time.Now())
				if c.w.Until.IsZero() {
					w.Since, w.Until = got.Buckets[0].Start, got.Buckets[0].Start.Add(24*time.Hour) // "now" moved on
				}
				owner, all := c.w.Resolve(ctx)
				want := m.overview(w, tenantOwner(owner), all)
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("%s: overview differs (-want +got)\n%s", c.name, diff)
				}
				if got.Runs < c.runs {
					t.Errorf("%s: %d runs, want at least %d (the case is not vacuous)", c.name, got.Runs, c.runs)
				}
			}
			if _, err := b.Overview(context.Background(), logindex.Window{Since: base, Until: base.Add(-time.Hour)}); !errors.Is(err, logindex.ErrInvalidQuery) {
				t.Errorf("reversed window: err %v, want an invalid query", err)
			}
			if _, err := b.Overview(context.Background(), logindex.Window{Since: base.AddDate(0, 0, -30), Bucket: time.Second}); !errors.Is(err, logindex.ErrInvalidQuery) {
				t.Errorf("too many buckets: err %v, want an invalid query", err)
			}
		})
	}
}

// browseHost is a refusal of the i-th of a dozen hosts.
func browseHost(i int) egress.Entry {
	return egress.Entry{Host: fmt.Sprintf("h%02d.example", i), Port: 80, Reason: "not in policy", Connections: 1}
}

// TestValues: the languages and tools a scope's executions recorded, in
// every store.
func TestValues(t *testing.T) {
	entries := browseHistory(time.Now())
	entries[7].Tool = "" // not recorded: not a value
	entries[10].Tool, entries[10].Owner = "only_alice", alice
	cases := []struct {
		name  string
		owner string
		scope logindex.Scope
		want  logindex.Values
	}{
		{"own", "", logindex.Scope{}, logindex.Values{Languages: []string{"bash", "node", "python", "typescript"},
			Tools: []string{"execute_code", "execute_command", "run_script"}}},
		{"alice", alice, logindex.Scope{}, logindex.Values{Languages: []string{"bash", "node", "python", "typescript"},
			Tools: []string{"execute_code", "execute_command", "only_alice", "run_script"}}},
		{"all", "", logindex.Scope{All: true}, logindex.Values{Languages: []string{"bash", "node", "python", "typescript"},
			Tools: []string{"execute_code", "execute_command", "only_alice", "run_script"}}},
		{"nobody's", "", logindex.Scope{All: true, Owner: "nobody"}, logindex.Values{Languages: []string{}, Tools: []string{}}},
	}
	for _, bk := range backends() {
		t.Run(bk.name, func(t *testing.T) {
			v := loadBrowser(t, bk, entries).(logindex.ValueLister)
			for _, c := range cases {
				got, err := v.Values(ownerCtx(c.owner), c.scope)
				if err != nil {
					t.Fatal(err)
				}
				if diff := gocmp.Diff(c.want, got); diff != "" {
					t.Errorf("%s: values differ (-want +got)\n%s", c.name, diff)
				}
			}
		})
	}
}
