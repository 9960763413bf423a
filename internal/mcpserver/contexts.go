package mcpserver

// registerContexts registers the contexts toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerContexts() {}
