package mcpserver

// registerScripts registers the scripts toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerScripts() {}
