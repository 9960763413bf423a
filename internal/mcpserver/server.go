// Package mcpserver exposes codexec over the Model Context Protocol. It and
// its sub-packages are the only code that imports the SDK for serving: they
// decode typed tool inputs, call the domain packages (engine, session,
// scripts, …) and render their results as structuredContent plus a compact
// text. Each toolset, which
// CODEXEC_TOOLSETS can switch off, is one file of a sub-package: runtools
// (exec, codemode, scripts, commands), sessiontools (sessions, contexts),
// filetools (files, and files as resources), logtools (logs) and
// packagetools (packages); runtools also has the runs toolset (background
// runs). They all register through package tool, the one
// registration path and tool-error style; this package owns the Server:
// which toolsets are on, the middleware every request passes (tenancy,
// drain), the Streamable HTTP handler and its per-principal session cap.
//
// Tenancy: every request runs for one principal (tenant.From), decided once
// by the tenancy middleware; the stores filter by it. Cancellation: the SDK
// cancels a handler's ctx on notifications/cancelled or when the client goes
// away, and every run below stops on ctx.
//
// A Server is safe for concurrent tool calls.
package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/logtools"
	"github.com/codexec/codexec/internal/mcpserver/packagetools"
	"github.com/codexec/codexec/internal/mcpserver/runtools"
	"github.com/codexec/codexec/internal/mcpserver/sessiontools"
	"github.com/codexec/codexec/internal/mcpserver/tasks"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/shell"
	"github.com/codexec/codexec/internal/transfer"
	"github.com/codexec/codexec/internal/upstream"
	"github.com/codexec/codexec/internal/version"
)

// ModelSurfaceBudget is the most characters the part of the default
// tools/list that clients put in a model's context may cost: each tool
// without its output schema (name, title, description, input schema,
// annotations; compact JSON). Every conversation pays it, so the schema
// test fails beyond it.
//
// Output schemas are not counted here: clients read them to check results
// in code, and the tool formats of the model APIs have no field for them.
// They are bounded by WireBudget instead.
//
// 22 tools measured 10,256; the runs and checkpoint tools (get_run,
// cancel_run, list_runs, pause_session, resume_session, fork_session)
// brought 28 tools to 13,020, about 460 characters a tool as before. An
// operator whose agents need no background runs leaves out the runs
// toolset (CODEXEC_TOOLSETS). The transfer argument of upload_file and
// download_file (bytes over a URL instead of base64 in JSON) added 159:
// 13,179, and the budget grew by as much. The network argument (on the
// six tools that start or run code: execute_code, run_script,
// start_session, send_to_session, create_context, run_code) and the host
// filters of search_execution_logs added 1,096: 14,275. The background
// argument of send_to_session and install_package (so they run as MCP
// tasks too) added 64: 14,339, within the budget.
const ModelSurfaceBudget = 13100 + 159 + 1096

// WireBudget is the most characters the whole default tools/list may cost
// (compact JSON of its tools array, output schemas included): what a client
// downloads and keeps per connection. Every tool returns structured content
// and has an output schema, shape only (no descriptions, required lists or
// $defs, which not every client resolves) and portable (nullable as anyOf);
// the 22 output schemas measured 10,456 characters, 21,064 in all. The runs
// toolset (get_run, cancel_run, list_runs, and background on the four run
// tools) added 2,382; the checkpoint tools (pause_session, resume_session,
// fork_session) and the resumed and checkpoint_bytes fields added 2,773;
// merged, 26,651 in all. transfer "url" (the argument, upload_url,
// download_url, url_expires_at) added 293: 26,944, and the budget grew by
// as much. list_runs listing every replica's runs (replica, lost_at and
// note on each run, as list_sessions has) added 66: 27,010. error_message
// always present, null on success (nullable in the three output schemas of
// execute_code's shape), added 66: 27,125. logs present ([] included) on
// every code-mode result (nullable in execute_code's schema) added 28:
// 27,153. A run's network: the argument and host filters above (1,096)
// and the audit (network, network_mode) in the five results that carry it
// (execute_code's shape thrice, run_code, get_execution_log) added 2,790:
// 29,943. Which resource limits held for a run (limits: memory, pids, cpu,
// disk, by mechanism) in the seven results that describe one (execute_code's
// shape thrice, execute_command, execute_process, run_code,
// get_execution_log) added 1,001: 30,944. The OpenTelemetry trace id
// (trace_id, present only while traces are exported) in execute_code's
// shape thrice added 87: 31,031. Why each run ended (end_reason) and what
// it cost (usage: CPU, memory, processes, bytes written and sent, sandbox
// path, source) in the eight results that describe a run
// (get_execution_log's entry included) added 2,411: 33,442. The background
// form of send_to_session and install_package (their background argument,
// install_package's execution_id and status) added 124: 33,566.
const WireBudget = 26700 + 293 + 66 + 66 + 28 + 2790 + 1001 + 87 + 2411 + 124

// Version is the server version reported to clients (serverInfo.version
// in initialize): the module version of this build, as `codexec version`
// prints it ("devel" for a work-tree build).
var Version = version.Current().Version

// Toolset names accepted by CODEXEC_TOOLSETS; config owns the list, since
// it expands "all" to it.
var Toolsets = config.Toolsets

// Deps are the domain services the tools call. Engine is required; the other
// services are optional and their toolsets are skipped when nil.
type Deps struct {
	Config config.Config
	Engine *engine.Engine

	// Services added by later toolsets go below, one field per line.
	Sessions        *session.Manager    // sessions and contexts toolsets; nil disables them
	Packages        *packages.Installer // install_package; nil hides the tool
	SessionPackages SessionPackages     // per-session installs; nil until sessions are wired
	Scripts         *scripts.Runner
	Logs            logtools.History  // search_execution_logs, get_execution_log; nil disables them
	Limiter         quota.Limiter     // per-principal execution slots; nil: unlimited
	Files           files.Store       // files toolset, kept artifacts, resources; nil disables them
	Upstreams       *upstream.Manager // code mode's upstream MCP servers; nil = none configured
	Replicas        Router            // the replicas sharing the session registry (forward.go); nil = alone
	Runs            *runs.Manager     // background runs and the runs toolset; nil disables them
	Transfers       *transfer.Tickets // transfer "url" of upload_file/download_file (HTTP); nil: bytes in the calls only

	// What the tools say about the sandbox and take from the host, filled
	// by app from the parts it built.
	Isolated bool            // the backend keeps runs off the host and the network: tools' openWorldHint is false
	Shell    shell.Options   // execute_command and execute_process: allowlist, cwd roots, bash, PATH
	ExecLog  *execlog.Logger // the execution log, whose write failure search_execution_logs reports; nil: none
	Egress   *egress.Service // resolves the tools' network argument; nil: no network allowed

	// Approval asks a person to approve calls before they run (approval.go);
	// nil: nobody is asked.
	Approval *Approval
}

// Server is the MCP server with every enabled tool registered.
type Server struct {
	mcp   *mcp.Server
	deps  Deps
	drain *drain // running tool calls, for Shutdown (drain.go)
	// reg renders the refusals tenancy makes before a tool's handler runs
	// in that tool's error shape.
	reg *tool.Registrar
	// files serves the transfer URLs (FilesHandler).
	files *filetools.Files
	// tasks serves MCP Tasks over the background runs (taskcall.go); nil
	// when background runs are off.
	tasks *tasks.Wire
}

// New builds the server and registers the tools of every enabled toolset.
// Unknown toolset names are an error.
func New(deps Deps) (*Server, error) {
	s := &Server{deps: deps, drain: newDrain()}
	s.tasks = s.newTasks()
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codexec", Title: "codexec — code execution sandbox", Version: Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: slog.Default(), Capabilities: s.capabilities()})
	// Each call wraps the handler so far: a request passes traced, drain,
	// then tenancy, then taskCalls, then forward, then slots; traced is
	// outermost so that its span covers all of them.
	s.mcp.AddReceivingMiddleware(s.slots)
	s.mcp.AddReceivingMiddleware(s.forward)
	s.mcp.AddReceivingMiddleware(s.taskCalls)
	s.mcp.AddReceivingMiddleware(s.tenancy)
	s.mcp.AddReceivingMiddleware(s.drain.middleware)
	s.mcp.AddReceivingMiddleware(s.traced)
	for _, ts := range deps.Config.Toolsets {
		if !slices.Contains(Toolsets, ts) {
			return nil, fmt.Errorf("CODEXEC_TOOLSETS: unknown toolset %q (known: %v)", ts, Toolsets)
		}
	}
	r := tool.NewRegistrar(s.mcp)
	s.reg = r
	if deps.Approval != nil {
		r.SetGate(s.gate)
	}
	s.drain.refuse = func(call *mcp.CallToolRequest) mcp.Result {
		return r.ErrorResultFor(call.Params.Name, tool.Coded(tool.CodeServerNotReady, "%v", ErrShuttingDown))
	}
	fs := filetools.New(filetools.Deps{Config: deps.Config, Files: deps.Files, Sessions: deps.Sessions, Transfers: deps.Transfers})
	s.files = fs
	run := runtools.Deps{Config: deps.Config, Engine: deps.Engine, Sessions: deps.Sessions, Scripts: deps.Scripts,
		Upstreams: deps.Upstreams, Shell: deps.Shell, Files: fs, Isolated: deps.Isolated, Peers: s.peers(), Egress: deps.Egress}
	if slices.Contains(deps.Config.Toolsets, "runs") {
		run.Runs = deps.Runs // background: true needs get_run to be read
	}
	sess := sessiontools.Deps{Sessions: deps.Sessions, Engine: deps.Engine, Files: fs, Isolated: deps.Isolated, Peers: s.peers(), Egress: deps.Egress,
		Runs: run.Runs, BackgroundMax: deps.Config.Background.MaxTimeout}
	register := map[string]func(){
		"exec":     func() { runtools.RegisterExec(r, run) },
		"sessions": func() { sessiontools.RegisterSessions(r, sess) },
		"contexts": func() { sessiontools.RegisterContexts(r, sess) },
		"scripts":  func() { runtools.RegisterScripts(r, run) },
		"logs":     func() { logtools.Register(r, logtools.Deps{Logs: deps.Logs, ExecLog: deps.ExecLog}) },
		"packages": func() {
			packagetools.Register(r, packagetools.Deps{Packages: deps.Packages, SessionPackages: deps.SessionPackages, Runs: run.Runs})
		},
		"commands": func() { runtools.RegisterCommands(r, run) },
		"files":    func() { fs.Register(r) },
		"codemode": func() { runtools.RegisterCodeMode(r, run) },
		"runs":     func() { runtools.RegisterRuns(r, run) },
	}
	for _, ts := range Toolsets {
		if slices.Contains(deps.Config.Toolsets, ts) {
			register[ts]()
		}
	}
	// Last, so its resources/list extension runs inside tenancy, which names the caller.
	fs.RegisterResources(r)
	return s, nil
}

const instructions = `codexec runs code for you in a sandbox. execute_code runs python, node/javascript, typescript or bash once;
sessions (start_session/send_to_session, or create_context/run_code) keep interpreter state between calls.
A program that fails or times out is a normal result: read status, exit_code, stdout and stderr.`

// capabilities are the server's capabilities beyond those the SDK adds
// for what is registered: logging (the SDK's default) and, with background
// runs on, the Tasks extension.
func (s *Server) capabilities() *mcp.ServerCapabilities {
	c := serverCapabilities()
	if s.tasks != nil {
		c.Extensions = map[string]any{tasks.ExtensionID: map[string]any{}}
	}
	return c
}

// MCP returns the underlying SDK server (for in-process transports in tests).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves on t until the client disconnects or ctx is cancelled.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, s.withTasks(t))
}

// withTasks is t serving MCP Tasks (package tasks) when background runs
// are on. Its one client is tenant.Local's, as tenancy decides for a
// transport without auth.
func (s *Server) withTasks(t mcp.Transport) mcp.Transport {
	if s.tasks == nil {
		return t
	}
	return s.tasks.Transport(context.Background(), t)
}

// SessionPackages is what the sessions service provides so install_package
// can install into one session (see packagetools.SessionPackages).
type SessionPackages = packagetools.SessionPackages

// serverCapabilities are the capabilities declared beyond those the SDK
// adds for what is registered (tools, resources): logging, and prompts,
// because the SDK answers prompts/list (with no prompts) and a server that
// answers a feature's requests must declare it. No prompt ever changes, so
// prompts declare no listChanged.
func serverCapabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, Prompts: &mcp.PromptCapabilities{}}
}
