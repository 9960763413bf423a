// Package mcpserver exposes codexec over the Model Context Protocol. It is the
// only package that imports the SDK for serving: it decodes typed tool inputs,
// calls the domain packages (engine, session, scripts, …) and renders their
// results as structuredContent plus a compact text. One file per tool family;
// each family is a toolset that CODEXEC_TOOLSETS can switch off.
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
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/shell"
	"github.com/codexec/codexec/internal/upstream"
)

// Version is the server version reported to clients.
var Version = "0.1.0"

// Toolset names accepted by CODEXEC_TOOLSETS.
var Toolsets = []string{"exec", "sessions", "contexts", "scripts", "logs", "packages", "commands", "files", "codemode"}

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
	Logs            *logindex.Index
	Limiter         quota.Limiter     // per-principal execution slots; nil: unlimited
	Files           files.Store       // files toolset, kept artifacts, resources; nil disables them
	Upstreams       *upstream.Manager // code mode's upstream MCP servers; nil = none configured

	// What the tools say about the sandbox and take from the host, filled
	// by app from the parts it built.
	Isolated bool            // the backend keeps runs off the host and the network: tools' openWorldHint is false
	Shell    shell.Options   // execute_command and execute_process: allowlist, cwd roots, bash, PATH
	ExecLog  *execlog.Logger // the execution log, whose write failure search_execution_logs reports; nil: none
}

// Server is the MCP server with every enabled tool registered.
type Server struct {
	mcp   *mcp.Server
	deps  Deps
	drain *drain // running tool calls, for Shutdown (drain.go)
}

// New builds the server and registers the tools of every enabled toolset.
// Unknown toolset names are an error.
func New(deps Deps) (*Server, error) {
	s := &Server{deps: deps, drain: newDrain()}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "codexec", Title: "codexec — code execution sandbox", Version: Version},
		&mcp.ServerOptions{Instructions: instructions, Logger: slog.Default()})
	s.mcp.AddReceivingMiddleware(s.tenancy)
	s.mcp.AddReceivingMiddleware(s.drain.middleware)
	for _, ts := range deps.Config.Toolsets {
		if !slices.Contains(Toolsets, ts) {
			return nil, fmt.Errorf("CODEXEC_TOOLSETS: unknown toolset %q (known: %v)", ts, Toolsets)
		}
	}
	register := map[string]func(){
		"exec": s.registerExec, "sessions": s.registerSessions, "contexts": s.registerContexts,
		"scripts": s.registerScripts, "logs": s.registerLogs, "packages": s.registerPackages,
		"commands": s.registerCommands, "files": s.registerFiles, "codemode": s.registerCodeMode,
	}
	for _, ts := range Toolsets {
		if slices.Contains(deps.Config.Toolsets, ts) {
			register[ts]()
		}
	}
	s.registerResources()
	return s, nil
}

const instructions = `codexec runs code for you in a sandbox. execute_code runs python, node/javascript, typescript or bash once;
sessions (start_session/send_to_session, or create_context/run_code) keep interpreter state between calls.
A program that fails or times out is a normal result: read status, exit_code, stdout and stderr.`

// MCP returns the underlying SDK server (for in-process transports in tests).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves on t until the client disconnects or ctx is cancelled.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

func ptr[T any](v T) *T { return &v }

// callContext extracts the caller's identifiers (agent, trace and chat id,
// snake_case or camelCase) from the call's _meta, for the execution log.
func callContext(req *mcp.CallToolRequest) execlog.CallContext {
	var cc execlog.CallContext
	if req == nil || req.Params == nil {
		return cc
	}
	m := req.Params.GetMeta()
	get := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := m[k].(string); ok {
				return v
			}
		}
		return ""
	}
	cc.AgentID = get("agent_id", "agentId")
	cc.TraceID = get("trace_id", "traceId")
	cc.ChatID = get("chat_id", "chatId")
	return cc
}

// jsonText renders v as indented JSON text content (the context tools'
// documented results are JSON text).
func jsonText(v any) *mcp.CallToolResult {
	b, _ := json.MarshalIndent(v, "", "  ")
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}
