package logindex

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/tenant"
)

// TestOwnerFilter: every query answers for its ctx's principal only; entries
// without an owner (written before tenants) are the local principal's.
func TestOwnerFilter(t *testing.T) {
	x, lg, _ := newIndex(t)
	now := time.Now().UTC()
	for _, e := range []execlog.Entry{
		{ExecutionID: "exec_old", Language: "python", Code: "print('shared word')", Status: "success", ExecutedAt: now.Add(-3 * time.Second)},
		{ExecutionID: "exec_local", Language: "python", Code: "print('shared word')", Status: "success", ExecutedAt: now.Add(-2 * time.Second), Owner: tenant.Local},
		{ExecutionID: "exec_alice", Language: "python", Code: "print('shared word')", Status: "success", ExecutedAt: now.Add(-time.Second), Owner: "alice"},
		{ExecutionID: "exec_bob", Language: "bash", Code: "sleep 9 # shared word", Status: "cancelled", ExecutedAt: now, Owner: "bob"},
	} {
		if err := lg.AppendExecution(e); err != nil {
			t.Fatal(err)
		}
	}
	bg := context.Background()
	tests := []struct {
		principal string
		q         Query
		want      []string
	}{
		{tenant.Local, Query{}, []string{"exec_local", "exec_old"}},
		{tenant.Local, Query{Text: "shared word"}, []string{"exec_local", "exec_old"}},
		{"alice", Query{}, []string{"exec_alice"}},
		{"alice", Query{Text: "shared", Language: "python", Status: "success"}, []string{"exec_alice"}},
		{"bob", Query{Status: "cancelled"}, []string{"exec_bob"}},
		{"bob", Query{Status: "cancelled", Text: "sleep"}, []string{"exec_bob"}},
		{"alice", Query{Status: "cancelled"}, []string{}},
		{"mallory", Query{Text: "shared"}, []string{}},
	}
	for _, tt := range tests {
		hits, total, err := x.Search(tenant.With(bg, tt.principal), tt.q)
		if err != nil {
			t.Fatalf("%s %+v: %v", tt.principal, tt.q, err)
		}
		if d := cmp.Diff(tt.want, ids(hits)); d != "" || total != len(tt.want) {
			t.Errorf("%s %+v: total %d (-want +got):\n%s", tt.principal, tt.q, total, d)
		}
	}
	if _, err := x.Get(tenant.With(bg, "bob"), "exec_alice"); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob got alice's execution: %v", err)
	}
	if _, err := x.Get(bg, "exec_old"); err != nil {
		t.Errorf("local cannot get its legacy entry: %v", err)
	}
	if e, err := x.Get(tenant.With(bg, "alice"), "exec_alice"); err != nil || e.Owner != "alice" {
		t.Errorf("alice's own entry: %+v %v", e, err)
	}
}

// TestOldSchemaRebuilt: an index written by the schema before owners is
// dropped at Open and rebuilt from the files.
func TestOldSchemaRebuilt(t *testing.T) {
	dir := t.TempDir()
	lg, err := execlog.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if err := lg.AppendExecution(execlog.Entry{ExecutionID: "exec_1", Language: "bash", Code: "echo", Status: "success", ExecutedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE execs (rid INTEGER PRIMARY KEY, id TEXT); CREATE TABLE files (name TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	x, err := Open(dir, filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	hits, _, err := x.Search(context.Background(), Query{})
	if err != nil || len(hits) != 1 {
		t.Fatalf("after the rebuild: %v %v", ids(hits), err)
	}
}
