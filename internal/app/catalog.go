package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
)

// ToolCatalog assembles a throwaway server with every toolset on (code
// mode's search_tools included, through an empty upstreams file) in a
// temporary data directory, and returns its tools as tools/list shows them.
// It is the source of the generated tools reference. The server runs in
// subprocess mode without warm runners, so the catalog is the same on every
// host; in namespace and docker mode the tools that run code say
// openWorldHint false instead (their runs have no network).
func ToolCatalog(ctx context.Context, env HostEnv) ([]*mcp.Tool, error) {
	dir, err := os.MkdirTemp("", "codexec-catalog-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	upstreams := filepath.Join(dir, "upstreams.json")
	if err := os.WriteFile(upstreams, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		return nil, err
	}
	cfg := config.Defaults(filepath.Join(dir, "data"))
	cfg.SandboxMode = config.ModeSubprocess
	cfg.PoolSize = 0
	cfg.Toolsets = config.Toolsets
	cfg.CodeMode.Upstreams = upstreams
	env.Home, env.Cwd = dir, dir
	a, err := Build(ctx, cfg, env)
	if err != nil {
		return nil, fmt.Errorf("assemble the server: %w", err)
	}
	defer a.Close()
	return a.Server.Tools(ctx)
}
