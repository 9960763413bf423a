package logindex

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/execlog"
)

func ip(i int) *int { return &i }

func newIndex(t *testing.T) (*Index, *execlog.Logger, string) {
	t.Helper()
	dir := t.TempDir()
	lg, err := execlog.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	x, err := Open(dir, filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	lg.OnAppend(func(f string, _ int64, _ []byte) { x.Notify(f) })
	t.Cleanup(func() { _ = x.Close(); _ = lg.Close() })
	return x, lg, dir
}

func ids(h []Hit) []string {
	out := []string{}
	for _, x := range h {
		out = append(out, x.ExecutionID)
	}
	return out
}

func TestSearchFiltersAndGet(t *testing.T) {
	x, lg, dir := newIndex(t)
	now := time.Now().UTC()
	sess := "sess_abc"
	entries := []execlog.Entry{
		{ExecutionID: "exec_1", Language: "python", Code: "import pandas as pd", Stderr: "Traceback\nModuleNotFoundError: No module named 'pandas'\n", ExitCode: ip(1), Status: "execution_error", ExecutedAt: now.Add(-3 * time.Hour)},
		{ExecutionID: "exec_2", Language: "node", Code: "console.log(read_csv)", Stdout: "hello world", ExitCode: ip(0), Status: "success", ExecutedAt: now.Add(-2 * time.Hour)},
		{ExecutionID: "exec_3", Language: "python", Code: "while True: pass", Status: "timeout", TimedOut: true, ExecutedAt: now.Add(-1 * time.Hour)},
		{ExecutionID: "exec_4", SessionID: &sess, Language: "python", Code: "x = 1", ExitCode: ip(0), Status: "success", ExecutedAt: now},
	}
	for _, e := range entries {
		if err := lg.AppendExecution(e); err != nil {
			t.Fatal(err)
		}
	}
	// A seed-000 style session file written by hand, with a torn last line.
	later := now.Add(time.Second).Format(time.RFC3339Nano)
	hand := `{"type":"session_start","session_id":"sess_h","language":"bash","started_at":"` + now.Format(time.RFC3339) + `"}
{"type":"execution","execution_id":"exec_h1","session_id":"sess_h","code":"echo hi","stdout":"hi\n","stderr":"","exit_code":0,"duration_ms":3,"at":"` + later + `"}
{"type":"execution","execution_id":"exec_torn","session_id":"sess_h","code":"ec`
	if err := os.WriteFile(filepath.Join(dir, "session-sess_h.jsonl"), []byte(hand), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := x.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    Query
		want []string
	}{
		{Query{}, []string{"exec_h1", "exec_4", "exec_3", "exec_2", "exec_1"}},
		{Query{Language: "python"}, []string{"exec_4", "exec_3", "exec_1"}},
		{Query{Language: "bash"}, []string{"exec_h1"}},
		{Query{Status: "failed"}, []string{"exec_1"}},
		{Query{Status: "timeout"}, []string{"exec_3"}},
		{Query{Status: "success", Language: "node"}, []string{"exec_2"}},
		{Query{Text: "pandas"}, []string{"exec_1"}},
		{Query{Text: "ModuleNotFoundError"}, []string{"exec_1"}},
		{Query{Text: "read_csv"}, []string{"exec_2"}},
		{Query{Text: "hello WORLD"}, []string{"exec_2"}},
		{Query{Since: now.Add(-90 * time.Minute)}, []string{"exec_h1", "exec_4", "exec_3"}},
		{Query{Limit: 2}, []string{"exec_h1", "exec_4"}},
	}
	for _, c := range cases {
		hits, total, err := x.Search(ctx, c.q)
		if err != nil {
			t.Fatalf("%+v: %v", c.q, err)
		}
		if diff := cmp.Diff(c.want, ids(hits)); diff != "" {
			t.Errorf("%+v: (-want +got)\n%s", c.q, diff)
		}
		if c.q.Limit == 0 && total != len(c.want) {
			t.Errorf("%+v: total %d", c.q, total)
		}
	}
	hits, _, _ := x.Search(ctx, Query{Status: "failed"})
	if len(hits) != 1 || hits[0].ErrorPreview == nil || *hits[0].ErrorPreview != "ModuleNotFoundError: No module named 'pandas'" {
		t.Errorf("error preview: %+v", hits)
	}
	e, err := x.Get(ctx, "exec_h1")
	if err != nil || e.Language != "bash" || e.Stdout != "hi\n" || e.SessionID == nil || *e.SessionID != "sess_h" || e.Status != "success" {
		t.Errorf("get session entry: %+v %v", e, err)
	}
	e, err = x.Get(ctx, "exec_4")
	if err != nil || e.Code != "x = 1" || *e.SessionID != sess {
		t.Errorf("get exec_4: %+v %v", e, err)
	}
	if _, err := x.Get(ctx, "exec_torn"); err == nil {
		t.Errorf("torn line was indexed")
	}
	// Appending after the torn fragment: the new entry is still found.
	f, _ := os.OpenFile(filepath.Join(dir, "session-sess_h.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	_, _ = f.WriteString(`{"type":"execution","execution_id":"exec_h2","session_id":"sess_h","code":"echo after","stdout":"","stderr":"","exit_code":3,"duration_ms":1,"at":"` + now.Format(time.RFC3339) + `"}` + "\n")
	_ = f.Close()
	_ = x.Sync(ctx, true)
	if e, err := x.Get(ctx, "exec_h2"); err != nil || e.Code != "echo after" || e.Status != "execution_error" {
		t.Errorf("entry after torn fragment: %+v %v", e, err)
	}
}

func TestRetention(t *testing.T) {
	x, lg, dir := newIndex(t)
	now := time.Now().UTC()
	old := now.AddDate(0, 0, -40)
	ancient := now.AddDate(0, 0, -100)
	for _, e := range []execlog.Entry{
		{ExecutionID: "exec_old_ok", Language: "python", Code: "1", ExitCode: ip(0), Status: "success", ExecutedAt: old},
		{ExecutionID: "exec_old_fail", Language: "python", Code: "2", ExitCode: ip(1), Status: "execution_error", ExecutedAt: old},
		{ExecutionID: "exec_anc_fail", Language: "python", Code: "3", ExitCode: ip(1), Status: "execution_error", ExecutedAt: ancient},
		{ExecutionID: "exec_new_ok", Language: "python", Code: "4", ExitCode: ip(0), Status: "success", ExecutedAt: now},
	} {
		if err := lg.AppendExecution(e); err != nil {
			t.Fatal(err)
		}
	}
	sess := filepath.Join(dir, execlog.SessionFile("sess_old"))
	_ = os.WriteFile(sess, []byte(`{"type":"execution","execution_id":"exec_s","session_id":"sess_old","code":"x","exit_code":0,"at":"`+ancient.Format(time.RFC3339)+`"}`+"\n"), 0o600)
	_ = os.Chtimes(sess, ancient, ancient)
	ctx := context.Background()
	if err := x.Sync(ctx, true); err != nil {
		t.Fatal(err)
	}
	if _, total, _ := x.Search(ctx, Query{}); total != 5 {
		t.Fatalf("before retention: %d", total)
	}
	if err := x.ApplyRetention(ctx, now, Retention{Success: 30, Failure: 90, Session: 90}); err != nil {
		t.Fatal(err)
	}
	hits, _, _ := x.Search(ctx, Query{})
	if diff := cmp.Diff([]string{"exec_new_ok", "exec_old_fail"}, ids(hits)); diff != "" {
		t.Errorf("after retention (-want +got)\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, execlog.DailyFile(ancient))); !os.IsNotExist(err) {
		t.Errorf("ancient daily file not removed: %v", err)
	}
	if _, err := os.Stat(sess); !os.IsNotExist(err) {
		t.Errorf("old session file not removed: %v", err)
	}
	if e, err := x.Get(ctx, "exec_old_fail"); err != nil || e.Code != "2" {
		t.Errorf("kept entry unreadable after rewrite: %+v %v", e, err)
	}
}

func TestSearchErrorKinds(t *testing.T) {
	x, _, _ := newIndex(t)
	tests := []struct {
		name string
		q    Query
	}{
		{"unknown status", Query{Status: "weird"}},
		{"no searchable words", Query{Text: "?!"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := x.Search(context.Background(), tc.q)
			if !errors.Is(err, ErrInvalidQuery) || errors.Is(err, ErrUnavailable) {
				t.Errorf("want ErrInvalidQuery, got %v", err)
			}
		})
	}
	// An index whose log directory is gone cannot catch up: unavailable,
	// not a bad query.
	if err := os.RemoveAll(x.dir); err != nil {
		t.Fatal(err)
	}
	_, _, err := x.Search(context.Background(), Query{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), x.dbPath) {
		t.Errorf("want ErrUnavailable naming the database, got %v", err)
	}
}
