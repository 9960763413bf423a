package mcpserver

import "github.com/codexec/codexec/internal/mcpserver/tool"

// Results are each tool's result type and output schema (for
// results_fit_test.go).
func (s *Server) Results() map[string]tool.Result { return s.reg.Results() }
