// Package runtools is the MCP face of running code on demand: the toolsets
// exec (execute_code, one-shot or in a session, plain or code mode),
// codemode (search_tools over the upstream MCP servers), scripts (saved,
// versioned programs), commands (allowlisted host programs) and runs (the
// background runs that the one-shot tools start with background: true). Each
// Register function adds one toolset through a tool.Registrar; the handlers
// decode typed inputs, call engine, session, scripts, shell or codemode,
// and render their results. The persistent-interpreter tools are
// sessiontools'.
package runtools

import (
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/shell"
	"github.com/codexec/codexec/internal/upstream"
)

// Deps are the services the run tools call. Engine and Files are required;
// a toolset whose service is nil is not registered (scripts without
// Scripts, codemode without Upstreams).
type Deps struct {
	Config    config.Config     // timeout defaults, code-mode limits
	Engine    *engine.Engine    // one-shot runs and timeout resolution
	Sessions  *session.Manager  // execute_code's session_id; nil: refused
	Scripts   *scripts.Runner   // the scripts toolset
	Upstreams *upstream.Manager // code mode's upstream MCP servers; nil = none configured
	Shell     shell.Options     // execute_command and execute_process: allowlist, cwd roots, bash, PATH
	Files     *filetools.Files  // staged uploads in, created files out
	// Runs keeps background runs (background: true, and the runs toolset);
	// nil: background is refused and the toolset not registered.
	Runs *runs.Manager
	// Peers are the other replicas (list_runs lists the caller's runs on
	// them too); nil when alone.
	Peers sessiontools.Peers
	// Isolated: the backend keeps runs off the host and the network, so the
	// run tools' openWorldHint is false unless egress is on (openWorld).
	Isolated bool
	// Egress resolves the network argument within the caller's ceiling;
	// nil: the server allows no network.
	Egress *egress.Service
}

// toolset is one toolset being registered: where to and with what.
type toolset struct {
	r    *tool.Registrar
	deps Deps
}

// RegisterExec adds execute_code.
func RegisterExec(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerExec() }

// RegisterCodeMode adds search_tools when upstream servers are configured.
func RegisterCodeMode(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerCodeMode() }

// RegisterScripts adds save_script, get_script, list_scripts,
// search_scripts and run_script when scripts are enabled.
func RegisterScripts(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerScripts() }

// RegisterRuns adds get_run, cancel_run and list_runs when background runs
// are enabled.
func RegisterRuns(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerRuns() }

// RegisterCommands adds execute_command and execute_process (always: with
// no allowlist they explain how the operator enables them).
func RegisterCommands(r *tool.Registrar, d Deps) { (&toolset{r, d}).registerCommands() }

// openWorld is the openWorldHint of the tools that run code: the code may
// reach the host's network (no isolation), or the hosts the operator
// allows (CODEXEC_EGRESS_ALLOW).
func (s *toolset) openWorld() bool { return !s.deps.Isolated || s.deps.Egress.Enabled() }
