package mcpserver

// registerLogs registers the logs toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerLogs() {}
