package mcpserver

// registerPackages registers the packages toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerPackages() {}
