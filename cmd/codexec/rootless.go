package main

import (
	"context"
	"os"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/rootless"
)

// rootlessStep runs serve or doctor again in a user namespace of codexec's
// own when codexec was started by a normal user and may use the namespace
// sandbox (auto or namespace mode) and this host lets the user make one
// (package rootless); done reports that it did, with its exit status.
// Otherwise it records in env why not, or that this is that server.
func rootlessStep(ctx context.Context, cfg config.Config, env *app.HostEnv) (code int, done bool) {
	if _, ok := rootless.Inside(); ok {
		env.Rootless = true
		return 0, false
	}
	if os.Geteuid() == 0 || (cfg.SandboxMode != config.ModeAuto && cfg.SandboxMode != config.ModeNamespace) {
		return 0, false
	}
	if env.NoRootless = rootless.Probe(ctx); env.NoRootless != nil {
		return 0, false
	}
	code, err := rootless.Reexec(os.Args[1:])
	if err != nil {
		env.NoRootless = err
		return 0, false
	}
	return code, true
}
