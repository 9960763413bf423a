package storetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/google/go-cmp/cmp"
)

const alice = "alice@example.com"

// history is a fixed set of executions (the same on every run) with what
// search has to cope with: words joined by '_', '-' and '.', case,
// diacritics, several principals, session lines without a status, and
// executions in the same millisecond.
func history(base time.Time) []execlog.Entry {
	r := rand.New(rand.NewPCG(25, 1))
	codes := []string{"import pandas as pd\nprint(total_sum)", "console.log('café au lait')", "echo foo-bar && ls x.y",
		"import numpy_array\nraise ValueError('Über bad')", "print('hello world')", "fetch_prices(\"EUR\")"}
	outs := []string{"hello world", "Traceback (most recent call last):\nValueError: Über bad", "", "42\n", "foo bar baz",
		"smørrebrød Ελληνικά straße naïve 日本語 x² ﬁle Ǆemal İstanbul"}
	langs := []string{"python", "node", "bash", "typescript"}
	statuses := []string{"success", "success", "execution_error", "timeout", "cancelled", "lost", "setup_error"}
	var out []execlog.Entry
	for i := range 160 {
		at := base.Add(-time.Duration(i) * 5 * time.Hour).Add(time.Duration(r.IntN(3600_000)) * time.Millisecond)
		if i%17 == 1 {
			at = out[i-1].ExecutedAt // same millisecond as the previous one
		}
		e := execlog.Entry{ExecutionID: fmt.Sprintf("exec_%04d", i), Language: langs[r.IntN(len(langs))],
			Code: codes[r.IntN(len(codes))], Stdout: outs[r.IntN(len(outs))], Status: statuses[r.IntN(len(statuses))],
			DurationMs: int64(r.IntN(5000)), ExecutedAt: at.UTC()}
		code := r.IntN(3)
		e.ExitCode = &code
		if e.Status != "success" {
			e.Stderr, e.ErrorMessage = "line 1\nboom: it failed", "exit status 1"
		}
		if i%5 == 0 {
			e.Owner = alice
		}
		if i%6 == 0 {
			e.Network = append(e.Network, egress.Entry{Host: "api.example.com", Port: 443, Allowed: true, Connections: 1})
		}
		if i%9 == 0 {
			e.Network = append(e.Network, egress.Entry{Host: "evil.example", Port: 443, Reason: "not in policy", Connections: 1})
		}
		if i%7 == 0 {
			sid := fmt.Sprintf("sess_%d", i%3)
			e.SessionID = &sid
			if i%14 == 0 {
				e.Status = "" // a session line judged by its exit code
			}
		}
		out = append(out, e)
	}
	return out
}

// answer is a Search result as compared between stores.
type answer struct {
	Hits  []logindex.Hit
	Total int
	Err   string
}

func search(ctx context.Context, h logindex.History, q logindex.Query) answer {
	hits, total, err := h.Search(ctx, q)
	if err != nil {
		kind := "error"
		if errors.Is(err, logindex.ErrInvalidQuery) {
			kind = "invalid query"
		}
		return answer{Err: kind}
	}
	return answer{Hits: hits, Total: total}
}

var queries = []struct {
	name     string
	owner    string
	q        logindex.Query
	minTotal int // at least this many matches (the test is not vacuous)
}{
	{"everything, default page", "", logindex.Query{}, 100},
	{"page of 5", "", logindex.Query{Limit: 5}, 100},
	{"page above the cap", "", logindex.Query{Limit: 500}, 100},
	{"one word", "", logindex.Query{Text: "print"}, 10},
	{"word in other case", "", logindex.Query{Text: "PRINT"}, 10},
	{"all words required", "", logindex.Query{Text: "hello world print"}, 1},
	{"underscore keeps a word whole", "", logindex.Query{Text: "total_sum"}, 1},
	{"part of an underscore word", "", logindex.Query{Text: "total"}, 0},
	{"hyphen splits", "", logindex.Query{Text: "foo-bar"}, 1},
	{"dot splits", "", logindex.Query{Text: "x.y"}, 1},
	{"diacritics folded", "", logindex.Query{Text: "cafe"}, 1},
	{"diacritics folded, capital", "", logindex.Query{Text: "uber"}, 1},
	{"diacritics in the query", "", logindex.Query{Text: "Café"}, 1},
	// Words beyond ASCII, as unicode61 sees them: only Latin diacritics
	// fold (no ø→o, no Greek accents, no ligatures or digraphs), no
	// word segmentation of CJK runs.
	{"ø", "", logindex.Query{Text: "smorrebrod"}, 0},
	{"ø as written", "", logindex.Query{Text: "smørrebrød"}, 1},
	{"greek accent folded", "", logindex.Query{Text: "ελληνικα"}, 0},
	{"greek as written", "", logindex.Query{Text: "Ελληνικά"}, 1},
	{"sharp s", "", logindex.Query{Text: "STRASSE"}, 0},
	{"sharp s as written", "", logindex.Query{Text: "straße"}, 1},
	{"diaeresis", "", logindex.Query{Text: "naive"}, 1},
	{"cjk run", "", logindex.Query{Text: "日本語"}, 1},
	{"cjk part", "", logindex.Query{Text: "日本"}, 0},
	{"superscript digit", "", logindex.Query{Text: "x²"}, 1},
	{"ligature", "", logindex.Query{Text: "file"}, 0},
	{"ligature as written", "", logindex.Query{Text: "ﬁle"}, 1},
	{"digraph", "", logindex.Query{Text: "dzemal"}, 0},
	{"dotted capital I", "", logindex.Query{Text: "istanbul"}, 1},
	{"word in the output", "", logindex.Query{Text: "Traceback"}, 1},
	{"word in the error message", "", logindex.Query{Text: "boom"}, 1},
	{"no such word", "", logindex.Query{Text: "zebra"}, 0},
	{"status", "", logindex.Query{Status: "failed"}, 5},
	{"status timeout", "", logindex.Query{Status: "timeout"}, 1},
	{"status lost", "", logindex.Query{Status: "lost"}, 1},
	{"language", "", logindex.Query{Language: "bash"}, 5},
	{"language in other case", "", logindex.Query{Language: "Bash"}, 0},
	{"language in other case with text", "", logindex.Query{Language: "Bash", Text: "echo"}, 0},
	{"text, status and language", "", logindex.Query{Text: "import", Status: "failed", Language: "python"}, 0},
	{"since", "", logindex.Query{Since: time.Now().AddDate(0, 0, -5)}, 5},
	{"since with text", "", logindex.Query{Since: time.Now().AddDate(0, 0, -10), Text: "print"}, 1},
	{"filter token as text", "", logindex.Query{Text: "codexecstatusfailed"}, 1},
	{"reached host", "", logindex.Query{Host: "api.example.com"}, 5},
	{"denied host", "", logindex.Query{DeniedHost: "evil.example"}, 5},
	{"denied host never reached", "", logindex.Query{Host: "evil.example"}, 0},
	{"reached and denied", "", logindex.Query{Host: "api.example.com", DeniedHost: "evil.example"}, 1},
	{"host with text and status", "", logindex.Query{Host: "api.example.com", Text: "print", Status: "success"}, 0},
	{"another principal", alice, logindex.Query{}, 10},
	{"another principal, text", alice, logindex.Query{Text: "print"}, 1},
	{"unknown status", "", logindex.Query{Status: "weird"}, 0},
	{"text without words", "", logindex.Query{Text: "!!! ..."}, 0},
}

// TestHistorySearch appends the same executions to every store and requires
// every query and every get to answer the same.
func TestHistorySearch(t *testing.T) {
	entries := history(time.Now())
	got := map[string][]answer{}
	gets := map[string][]execlog.Entry{}
	for _, b := range backends() {
		h := b.open(t).history
		ctx := context.Background()
		for _, e := range entries {
			if err := h.Append(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		dup := entries[3]
		dup.Stdout = "a second entry with a recorded id"
		if err := h.Append(ctx, dup); err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			got[b.name] = append(got[b.name], search(ownerCtx(q.owner), h, q.q))
		}
		for _, e := range entries {
			g, err := h.Get(ownerCtx(e.Owner), e.ExecutionID)
			if err != nil {
				t.Fatalf("%s: get %s: %v", b.name, e.ExecutionID, err)
			}
			gets[b.name] = append(gets[b.name], g)
		}
		if _, err := h.Get(ownerCtx(alice), entries[1].ExecutionID); !errors.Is(err, logindex.ErrNotFound) {
			t.Errorf("%s: another principal's execution: err %v, want not found", b.name, err)
		}
	}
	for i, q := range queries {
		emb, pg := got["embedded"][i], got["postgres"][i]
		if diff := cmp.Diff(emb, pg); diff != "" {
			t.Errorf("%s: embedded and postgres differ (-embedded +postgres)\n%s", q.name, diff)
		}
		if emb.Total < q.minTotal {
			t.Errorf("%s: %d matches, want at least %d", q.name, emb.Total, q.minTotal)
		}
	}
	if g := gets["postgres"][3]; g.Stdout != entries[3].Stdout {
		t.Errorf("an entry appended again with its id replaced the first: stdout %q", g.Stdout)
	}
	if diff := cmp.Diff(gets["embedded"], gets["postgres"]); diff != "" {
		t.Errorf("get: embedded and postgres differ (-embedded +postgres)\n%s", diff)
	}
}

func ownerCtx(owner string) context.Context {
	if owner == "" {
		return context.Background()
	}
	return tenant.With(context.Background(), owner)
}

// ids lists every execution id a principal can find, newest first.
func ids(t *testing.T, h logindex.History, owner string) []string {
	hits, _, err := h.Search(ownerCtx(owner), logindex.Query{Limit: logindex.MaxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range hits {
		out = append(out, x.ExecutionID)
	}
	return out
}

// TestHistoryRetention applies the same retention to the same executions
// in every store and requires the same survivors.
func TestHistoryRetention(t *testing.T) {
	now := time.Now()
	entries := history(now)
	steps := []struct {
		name string
		now  time.Time
		r    logindex.Retention
	}{
		{"nothing expired", now, logindex.Retention{Success: 60, Failure: 60, Session: 60}},
		{"one-shot executions expire", now, logindex.Retention{Success: 7, Failure: 14, Session: 60}},
		{"sessions expire", now.AddDate(0, 0, 40), logindex.Retention{Success: 600, Failure: 600, Session: 30}},
	}
	left := map[string][][]string{}
	for _, b := range backends() {
		h := b.open(t).history
		for _, e := range entries {
			if err := h.Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		for _, st := range steps {
			if err := h.ApplyRetention(context.Background(), st.now, st.r); err != nil {
				t.Fatalf("%s: %s: %v", b.name, st.name, err)
			}
			left[b.name] = append(left[b.name], append(ids(t, h, ""), ids(t, h, alice)...))
		}
	}
	for i, st := range steps {
		emb := left["embedded"][i]
		if diff := cmp.Diff(emb, left["postgres"][i]); diff != "" {
			t.Errorf("%s: embedded and postgres keep different executions (-embedded +postgres)\n%s", st.name, diff)
		}
		t.Logf("%s: %d of %d kept", st.name, len(emb), len(entries))
	}
	if n := len(left["embedded"][0]); n != len(entries) {
		t.Errorf("nothing expired: %d kept, want %d", n, len(entries))
	}
	if a, b := len(left["embedded"][0]), len(left["embedded"][1]); b >= a || b == 0 {
		t.Errorf("one-shot retention kept %d of %d: want some dropped, some kept", b, a)
	}
	for _, id := range left["embedded"][2] {
		if e := entries[idNum(id)]; e.SessionID != nil {
			t.Errorf("session execution %s survived its session's retention", id)
		}
	}
}

func idNum(id string) int {
	var n int
	_, _ = fmt.Sscanf(strings.TrimPrefix(id, "exec_"), "%d", &n)
	return n
}

// TestHistoryCountCap: past logindex.CountCap matches both stores stop
// counting at the same number and return the same newest page; Browse
// stops at logindex.BrowseCountCap.
func TestHistoryCountCap(t *testing.T) {
	if testing.Short() {
		t.Skip("appends over 10,000 executions to each store")
	}
	base := time.Now().Add(-time.Hour)
	qs := []logindex.Query{{}, {Text: "capword"}, {Text: "capword", Status: "success", Limit: 7}}
	got := map[string][]answer{}
	for _, b := range backends() {
		h := b.open(t).history
		for i := range logindex.CountCap + 5 {
			e := execlog.Entry{ExecutionID: fmt.Sprintf("exec_cap%05d", i), Language: "python", Status: "success",
				Code: fmt.Sprintf("print('capword %d')", i), ExecutedAt: base.Add(time.Duration(i) * 100 * time.Millisecond)}
			if err := h.Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range qs {
			got[b.name] = append(got[b.name], search(context.Background(), h, q))
		}
		for _, q := range qs {
			p, err := h.(logindex.Browser).Browse(context.Background(), logindex.Filter{Query: q})
			if err != nil || p.Total != logindex.BrowseCountCap+1 {
				t.Errorf("%s: browse %+v: total %d, err %v; want %d (the cap plus one)", b.name, q, p.Total, err, logindex.BrowseCountCap+1)
			}
		}
	}
	for i, q := range qs {
		emb := got["embedded"][i]
		if diff := cmp.Diff(emb, got["postgres"][i]); diff != "" {
			t.Errorf("%+v: embedded and postgres differ (-embedded +postgres)\n%s", q, diff)
		}
		if emb.Total != logindex.CountCap+1 {
			t.Errorf("%+v: total %d, want %d (the cap plus one)", q, emb.Total, logindex.CountCap+1)
		}
	}
}
