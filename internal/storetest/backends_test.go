package storetest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/pgstore"
	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/sessionreg"
)

// stores is one implementation of every interface.
type stores struct {
	scripts  scripts.Libraries
	history  logindex.History
	registry sessionreg.Registry
}

// backend opens a fresh, empty set of stores for t.
type backend struct {
	name string
	open func(t *testing.T) stores
}

// backends returns the embedded stores and, on a throwaway PostgreSQL
// server started for t (t is skipped when PostgreSQL is not installed), the
// PostgreSQL ones.
func backends(t *testing.T) []backend {
	srv := pgtest.Start(t)
	return []backend{{"embedded", openEmbedded}, {"postgres", func(t *testing.T) stores { return openPostgres(t, srv) }}}
}

func openEmbedded(t *testing.T) stores {
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
	return stores{scripts: scripts.Files(lib), history: logindex.Embedded{Log: logger, Index: idx}, registry: &sessionreg.Memory{}}
}

func openPostgres(t *testing.T, srv *pgtest.Server) stores {
	st, err := pgstore.Open(context.Background(), srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return stores{scripts: st.Scripts(), history: st.History(), registry: st.Registry()}
}
