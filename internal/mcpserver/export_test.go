package mcpserver

import "github.com/codexec/codexec/internal/mcpserver/tool"

// ResultChecks is how the registrar treats each tool's results (for
// result_checks_test.go).
func (s *Server) ResultChecks() map[string]tool.ResultCheck { return s.reg.ResultChecks() }
