package pgstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
)

// TestConsoleMigration: executions recorded before migration 005 get
// their tool, end reason, sandbox and refused hosts from their entries, so
// the console lists and counts them like new ones; an entry holding a
// \u0000 (which jsonb refuses) keeps the defaults instead of failing the
// migration.
func TestConsoleMigration(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version < 5 {
			if err := apply(ctx, conn, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := time.Now().UTC().Truncate(time.Millisecond)
	old := execlog.Entry{ExecutionID: "exec_old", Language: "python", Code: "print(1)", Status: "success", ExecutedAt: at,
		Tool: "execute_code", EndReason: "exit", Usage: &execlog.Usage{Sandbox: "warm"},
		Network: []egress.Entry{{Host: "evil.example", Port: 443}, {Host: "evil.example", Port: 80}, {Host: "ok.example", Allowed: true}}}
	nul := execlog.Entry{ExecutionID: "exec_nul", Language: "python", Code: "print('\x00')", Status: "success",
		ExecutedAt: at.Add(-time.Second), Tool: "execute_code"}
	for i, e := range []execlog.Entry{old, nul} {
		doc, _ := json.Marshal(execlog.AsWritten(e))
		if _, err := conn.Exec(ctx, `INSERT INTO executions (rid, id, owner, language, status, duration_ms, executed_at,
			code_preview, words, entry, written_at) VALUES ($1, $2, 'local', 'python', 'success', 0, $3, '', '', $4, now())`,
			logindex.TimeKey(e.ExecutedAt)+int64(i), e.ExecutionID, e.ExecutedAt.UnixMilli(), string(doc)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(ctx, dsn) // applies 005
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p, err := st.History().Browse(ctx, logindex.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		ID, Tool, EndReason, Sandbox string
		Denied                       int
	}
	var rows []got
	for _, r := range p.Rows {
		rows = append(rows, got{r.ExecutionID, r.Tool, r.EndReason, r.Sandbox, r.Denied})
	}
	want := []got{{"exec_old", "execute_code", "exit", "warm", 1}, {"exec_nul", "", "", "", 0}}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("rows after the migration (-want +got)\n%s", diff)
	}
}
