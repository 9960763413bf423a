package app

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/upstream"
)

// upstreamEnv are the variables a stdio upstream inherits from codexec
// besides its own "env" (the set MCP clients conventionally pass).
var upstreamEnv = []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR"}

// NewUpstreams builds the code-mode upstream manager, or nil when no
// upstreams file is configured. A file that cannot be read or a bad policy
// is an error; a bad server only marks that server failed.
func NewUpstreams(cfg config.Config, env HostEnv) (*upstream.Manager, error) {
	if cfg.CodeMode.Upstreams == "" {
		return nil, nil
	}
	lookup := upstream.LookupIn(env.Environ)
	servers, err := upstream.LoadFile(cfg.CodeMode.Upstreams, lookup)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_UPSTREAMS: %w", err)
	}
	policy, err := upstream.ParsePolicy(cfg.CodeMode.ToolPolicy)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_TOOL_POLICY: %w", err)
	}
	var base []string
	for _, k := range upstreamEnv {
		if v, ok := lookup(k); ok {
			base = append(base, k+"="+v)
		}
	}
	return upstream.New(servers, &upstream.Options{BaseEnv: base, Policy: policy, CallTimeout: cfg.CodeMode.CallTimeout,
		MaxResultBytes: int(cfg.CodeMode.MaxResultBytes), Version: mcpserver.Version}), nil
}

// logUpstreams waits for the first connection attempts and logs each
// server's state (one bad upstream is a warning, never fatal).
func logUpstreams(ctx context.Context, m *upstream.Manager) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m.Wait(ctx)
	for _, s := range m.States() {
		if s.Status == upstream.StatusReady {
			slog.Info("upstream ready", "server", s.Name, "transport", s.Transport, "tools", s.Tools)
		} else {
			slog.Warn("upstream unavailable", "server", s.Name, "transport", s.Transport, "status", s.Status, "err", s.Error)
		}
	}
}
