package mcpserver

// registerCommands registers the commands toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerCommands() {}
