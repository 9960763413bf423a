package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/sandbox"
)

// SelectBackend returns the sandbox backend for cfg.SandboxMode. In auto mode
// it prefers the strongest mode the host supports and warns loudly when it
// has to fall back to subprocess.
func SelectBackend(ctx context.Context, cfg config.Config, extraRO []string) (sandbox.Backend, error) {
	switch cfg.SandboxMode {
	case config.ModeSubprocess:
		slog.Warn("SANDBOX MODE subprocess: code runs as a plain host process with full filesystem and network access and no resource limits (see SECURITY.md)")
		return sandbox.NewSubprocess(), nil
	case config.ModeNamespace:
		ns, err := newNamespace(extraRO)
		if err != nil {
			return nil, fmt.Errorf("CODEXEC_SANDBOX_MODE=namespace cannot run here: %w (run `codexec doctor`)", err)
		}
		return ns, nil
	case config.ModeAuto:
		ns, err := newNamespace(extraRO)
		if err == nil {
			return ns, nil
		}
		slog.Warn("SANDBOX MODE auto fell back to subprocess: code runs UNCONFINED (full filesystem and network access, no limits); see SECURITY.md and run `codexec doctor`", "namespace_unavailable", err.Error())
		return sandbox.NewSubprocess(), nil
	}
	return nil, fmt.Errorf("CODEXEC_SANDBOX_MODE=%s is not available in this build", cfg.SandboxMode)
}

// newNamespace builds the namespace backend and proves it works with a
// trial run, so auto mode never picks a backend that fails at first use.
func newNamespace(extraRO []string) (sandbox.Backend, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ns, err := sandbox.NewNamespace(self, extraRO)
	if err != nil {
		return nil, err
	}
	if err := sandbox.Probe(context.Background(), ns); err != nil {
		return nil, err
	}
	return ns, nil
}

// Doctor prints which sandbox modes work on this host and returns a non-zero
// exit code when the configured mode cannot run.
func Doctor(ctx context.Context, cfg config.Config, env HostEnv, w io.Writer) int {
	fmt.Fprintf(w, "configured mode: %s\n", cfg.SandboxMode)
	fmt.Fprintln(w, "subprocess: available (no isolation)")
	if _, err := SelectBackend(ctx, cfg, nil); err != nil {
		fmt.Fprintln(w, "error:", err)
		return 1
	}
	return 0
}
