package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tools lists the registered tools exactly as a client sees them: over an
// in-memory connection, tools/list page by page. The generated reference
// (package refdocs) is built from it, so the docs show what is served, not
// a second description of it.
func (s *Server) Tools(ctx context.Context) ([]*mcp.Tool, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.mcp.Connect(ctx, st, nil)
	if err != nil {
		return nil, fmt.Errorf("connect in memory: %w", err)
	}
	defer func() { _ = ss.Close() }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codexec-tools", Version: Version}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, fmt.Errorf("connect in memory: %w", err)
	}
	defer func() { _ = cs.Close() }()
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}
