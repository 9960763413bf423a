package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/pgstore"
)

// appendTimeout bounds one history write to the shared store, so a stalled
// database delays a tool result by at most this much.
const appendTimeout = 10 * time.Second

// openStore opens the shared store CODEXEC_STORE names, if any (nil for
// the embedded one), and mirrors every execution entry the logger writes
// into its history. It runs before the leftovers of killed servers are
// logged, so their lost runs reach the shared history too. The local JSONL
// files are still written: they are this server's own record (and its
// retention keeps pruning them).
func (a *App) openStore(ctx context.Context, cfg config.Config, logger *execlog.Logger) error {
	dsn := cfg.StoreDSN()
	if dsn == "" {
		return nil
	}
	st, err := pgstore.Open(ctx, dsn)
	if err != nil {
		return fmt.Errorf("CODEXEC_STORE: %w", err)
	}
	a.store = st
	a.closers = append(a.closers, st.Close)
	hist := st.History()
	base := context.WithoutCancel(ctx)
	logger.ObserveExecutions(func(e execlog.Entry) {
		ctx, cancel := context.WithTimeout(base, appendTimeout)
		defer cancel()
		if err := hist.Append(ctx, e); err != nil {
			slog.Error("shared execution history: entry not recorded", "execution_id", e.ExecutionID, "err", err)
		}
	})
	slog.Info("shared store: PostgreSQL", "store", config.MaskSecrets(dsn))
	return nil
}
