package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/sessionreg"
)

// stores is one implementation of every interface.
type stores struct {
	scripts scripts.Libraries
	history logindex.History
	browser logindex.Browser
	// pg is the PostgreSQL history (nil for the embedded stores).
	pg       *pgstore.History
	registry sessionreg.Registry
	records  checkpoint.Records
}

// backend opens a fresh, empty set of stores for t.
type backend struct {
	name string
	open func(t testing.TB) stores
}

// pg is the PostgreSQL server of this test binary (nil when it cannot
// run here, pgSkip saying why); each test gets a database of its own.
var (
	pg     *pgtest.Server
	pgSkip string
)

func TestMain(m *testing.M) {
	srv, skip, err := pgtest.Launch()
	if err != nil {
		fmt.Fprintln(os.Stderr, "storetest: PostgreSQL did not start:", err)
		os.Exit(1)
	}
	pg, pgSkip = srv, skip
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

// backends returns the embedded stores and the PostgreSQL ones; opening
// the latter skips the test, with the reason, when PostgreSQL is not
// installed (after the embedded part ran).
func backends() []backend {
	return []backend{{"embedded", openEmbedded}, {"postgres", openPostgres}}
}

func openEmbedded(t testing.TB) stores {
	dir := t.TempDir()
	lib, err := scripts.Open(filepath.Join(dir, "scripts"))
	if err != nil {
		t.Fatal(err)
	}
	logDir := filepath.Join(dir, "logs")
	logger, err := execlog.New(logDir)
	if err != nil {
		t.Fatal(err)
	}
	idx := logindex.New(logDir, filepath.Join(logDir, logindex.FileName))
	logger.OnAppend(func(file string, _ int64, _ []byte) { idx.Notify(file) })
	t.Cleanup(func() { _ = idx.Close(); _ = logger.Close() })
	return stores{scripts: scripts.Files(lib), history: logindex.Embedded{Log: logger, Index: idx}, browser: idx, registry: &sessionreg.Memory{},
		records: checkpoint.DirRecords{Dir: filepath.Join(dir, "checkpoint-records")}}
}

func openPostgres(t testing.TB) stores {
	if pg == nil {
		t.Skip(pgSkip)
	}
	st, err := pgstore.Open(context.Background(), pg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return stores{scripts: st.Scripts(), history: st.History(), browser: st.History(), pg: st.History(), registry: st.Registry(), records: st.Records()}
}
