package doctor

import (
	"fmt"
	"io"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/sandbox"
)

// printLimits prints, under a mode's line, which limits hold for a
// default run in that mode and how, exactly as its results will report
// them (engine.Limits): with the bounded disk runs would get in an isolated
// mode when one can be made here.
func printLimits(w io.Writer, cfg config.Config, b sandbox.Backend) {
	if _, ok := b.(sandbox.Enforcer); !ok {
		fmt.Fprintln(w, "  limits: not reported by this mode (its results carry no limits)")
		return
	}
	var diskBytes int64
	if b.Isolated() {
		if _, err := app.ProbeDisks(cfg); err == nil {
			diskBytes = cfg.DiskLimitBytes
		}
	}
	fmt.Fprintf(w, "  limits: %s\n", engine.Limits(b, sandbox.Spec{Limits: runLimits(cfg)}, diskBytes))
}

// runLimits are the limits of a default run (CODEXEC_*_LIMIT).
func runLimits(cfg config.Config) sandbox.Limits {
	return sandbox.Limits{MemoryBytes: cfg.MemoryLimitBytes, CPUs: cfg.CPULimit, Pids: cfg.PidsLimit, DiskBytes: cfg.DiskLimitBytes}
}
