package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/sandbox"
)

// SelectBackend returns the sandbox backend for cfg.SandboxMode. In auto mode
// it prefers the strongest mode the host supports and warns loudly when it
// has to fall back to subprocess.
func SelectBackend(ctx context.Context, cfg config.Config) (sandbox.Backend, error) {
	switch cfg.SandboxMode {
	case config.ModeSubprocess:
		slog.Warn("SANDBOX MODE subprocess: code runs as a plain host process with full filesystem and network access and no resource limits (see SECURITY.md)")
		return sandbox.NewSubprocess(), nil
	case config.ModeAuto:
		slog.Warn("SANDBOX MODE auto fell back to subprocess: no isolated backend is available; code runs unconfined (see SECURITY.md, run `codexec doctor`)")
		return sandbox.NewSubprocess(), nil
	}
	return nil, fmt.Errorf("CODEXEC_SANDBOX_MODE=%s is not available in this build", cfg.SandboxMode)
}

// Doctor prints which sandbox modes work on this host and returns a non-zero
// exit code when the configured mode cannot run.
func Doctor(ctx context.Context, cfg config.Config, env HostEnv, w io.Writer) int {
	fmt.Fprintf(w, "configured mode: %s\n", cfg.SandboxMode)
	fmt.Fprintln(w, "subprocess: available (no isolation)")
	if _, err := SelectBackend(ctx, cfg); err != nil {
		fmt.Fprintln(w, "error:", err)
		return 1
	}
	return 0
}
