package mcpserver

// registerSessions registers the sessions toolset. Not implemented yet: the toolset
// exposes no tools until its issue lands.
func (s *Server) registerSessions() {}

// sessionsExecutor returns what runs execute_code with a session_id, if the
// sessions toolset is available.
func (s *Server) sessionsExecutor() (sessionExecutor, bool) { return nil, false }
