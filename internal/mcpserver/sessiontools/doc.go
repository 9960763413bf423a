// Package sessiontools is the MCP face of persistent interpreters: the
// sessions toolset (start_session, send_to_session, close_session,
// list_sessions) and the contexts toolset (create_context, run_code,
// stop_context, list_contexts), two views of session.Manager whose state
// lives between calls. execute_code's session_id path is runtools'.
package sessiontools

import (
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/session"
)

// Deps are the services the session tools call. With Sessions nil neither
// toolset is registered.
type Deps struct {
	Sessions *session.Manager
	Engine   *engine.Engine   // timeout resolution for send_to_session
	Files    *filetools.Files // links and images of the files a run created
	// Isolated: the backend keeps runs off the host and the network, so the
	// tools that run code have openWorldHint false unless egress is on
	// (openWorld).
	Isolated bool
	// Peers are the other replicas whose sessions the listings add
	// (remote.go); nil: this server is alone.
	Peers Peers
	// Egress resolves the network argument within the caller's ceiling;
	// nil: the server allows no network.
	Egress *egress.Service
	// Runs keeps send_to_session's background runs (background: true, and
	// so its MCP tasks); nil: it has no background form.
	Runs *runs.Manager
	// BackgroundMax is a background send's timeout, default and cap
	// (CODEXEC_BACKGROUND_MAX_TIMEOUT_MS).
	BackgroundMax time.Duration
}

// toolset is one toolset being registered: where to and with what.
type toolset struct {
	r    *tool.Registrar
	deps Deps
}

// RegisterSessions adds start_session, send_to_session, close_session and
// list_sessions when sessions are enabled.
func RegisterSessions(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerSessions() }

// RegisterContexts adds run_code, create_context, stop_context and
// list_contexts when sessions are enabled.
func RegisterContexts(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerContexts() }

// openWorld is the openWorldHint of the tools that run code: the code may
// reach the host's network (no isolation), or the hosts the operator
// allows (CODEXEC_EGRESS_ALLOW).
func (s *toolset) openWorld() bool { return !s.deps.Isolated || s.deps.Egress.Enabled() }
