package sessiontools

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/netarg"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/session"
)

// Error codes of the context tools, as the contract of run_code and its
// companions names them (docs/errors.md).
const (
	codeInvalidParams      = tool.CodeInvalidParams
	codeContextNotFound    = tool.CodeContextNotFound
	codeInvalidContextName = tool.CodeInvalidContextName
	codeInvalidLanguage    = tool.CodeInvalidLanguage
	codeCreationFailed     = tool.CodeContextCreationFailed
	codeStopFailed         = tool.CodeStopFailed
)

// CreateContextIn is create_context's input.
type CreateContextIn struct {
	Name        string     `json:"name,omitempty" jsonschema:"required"`
	Language    string     `json:"language,omitempty" jsonschema:"python (default)|javascript"`
	Description string     `json:"description,omitempty"`
	Network     *netarg.In `json:"network,omitempty" jsonschema:"as execute_code's"`
}

// ContextOut describes one context.
type ContextOut struct {
	ContextID   string    `json:"context_id"`
	Name        string    `json:"name"`
	Language    string    `json:"language"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	Status      string    `json:"status"` // active; dead if its interpreter died; lost or unreachable (remote.go)
	Message     string    `json:"message,omitempty"`
	LastUsed    time.Time `json:"last_used"`
	// With replicas (remote.go): the one holding it, and when it stopped
	// for status lost (Message says why for status unreachable).
	Replica string     `json:"replica,omitempty"`
	LostAt  *time.Time `json:"lost_at,omitempty"`
}

// RunCodeIn is run_code's input. Required fields are validated by the
// handler rather than the schema so that a missing one gets the
// INVALID_PARAMS error object instead of a generic validation message.
type RunCodeIn struct {
	Code      string     `json:"code,omitempty" jsonschema:"required"`
	ContextID string     `json:"context_id,omitempty" jsonschema:"required; id or name"`
	Network   *netarg.In `json:"network,omitempty" jsonschema:"replaces the context's, before this code"`
}

// RunCodeOut is run_code's output.
type RunCodeOut struct {
	Stdout        string         `json:"stdout"`
	Stderr        string         `json:"stderr"`
	Success       bool           `json:"success"`
	ExecutionTime float64        `json:"execution_time"` // seconds
	ExecutionID   string         `json:"execution_id"`
	Status        string         `json:"status"`
	EndReason     string         `json:"end_reason,omitempty" jsonschema:"exit|signal|oom|timeout|cancelled|disk_full|lost|not_started"`
	TimedOut      bool           `json:"timed_out"`
	ErrorMessage  *string        `json:"error_message,omitempty"`
	Network       []egress.Entry `json:"network,omitempty"`
	NetworkMode   string         `json:"network_mode,omitempty"`
	LogError      string         `json:"log_error,omitempty" jsonschema:"set when this run could not be recorded in the execution log, and why"`
	// Limits is engine.Result's: which resource limits held and how.
	Limits *sandbox.Enforcement `json:"limits,omitempty" jsonschema:"the resource limits that held for this run and how: cgroup, rlimit per process, container, a tmpfs or disk image size, or none"`
	// Usage is engine.Result's: what the run cost, where measured.
	Usage *engine.Usage `json:"usage,omitempty" jsonschema:"what the run cost, where measured (docs/cost.md)"`
}

// ContextIDIn names one context.
type ContextIDIn struct {
	ContextID string `json:"context_id,omitempty" jsonschema:"required"`
}

// StopContextOut is stop_context's output.
type StopContextOut struct {
	ContextID string `json:"context_id"`
	Status    string `json:"status"`
	Message   string `json:"message"`
}

// ListContextsOut is list_contexts' output.
type ListContextsOut struct {
	Contexts []ContextOut `json:"contexts"`
	Total    int          `json:"total"`
}

func (s *toolset) registerContexts() {
	if s.deps.Sessions == nil {
		return
	}
	tool.Add(s.r, &mcp.Tool{Name: "run_code", Title: "Run code in context",
		Description: "Run code in a context; state persists.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(s.openWorld())}}, s.runCode)
	tool.Add(s.r, &mcp.Tool{Name: "create_context", Title: "Create context",
		Description: "Create a named persistent context.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(false), OpenWorldHint: tool.Ptr(false)}}, s.createContext)
	tool.Add(s.r, &mcp.Tool{Name: "stop_context", Title: "Stop context",
		Description: "Stop a context after its running code finishes.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(false)}}, s.stopContext)
	tool.Add(s.r, &mcp.Tool{Name: "list_contexts", Title: "List contexts",
		Description: "List live contexts, newest first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.listContexts)
}

// contextNameRe is deliberately free of bounded repetition: `{0,99}` over
// Unicode classes compiles into a program that cost every start of the
// binary (including each sandbox launch) about 5 ms. Length is checked apart.
var contextNameRe = regexp.MustCompile(`^[\p{L}\p{N}][\p{L}\p{N}._-]*$`)

// validContextName reports whether name is a usable context name.
func validContextName(name string) bool {
	return utf8.RuneCountInString(name) <= 100 && contextNameRe.MatchString(name)
}

func (s *toolset) createContext(ctx context.Context, req *mcp.CallToolRequest, in CreateContextIn) (*mcp.CallToolResult, ContextOut, error) {
	if !validContextName(in.Name) {
		return nil, ContextOut{}, tool.Coded(codeInvalidContextName, "Invalid context name: name cannot be empty or contain special characters (got %q)", in.Name)
	}
	lang := "python"
	if in.Language != "" {
		l, err := runtime.Normalize(in.Language)
		if err != nil || (l != runtime.Python && l != runtime.Node) {
			return nil, ContextOut{}, tool.Coded(codeInvalidLanguage, "Unsupported language: %s. Must be 'python' or 'javascript'", in.Language)
		}
		lang = l
	}
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return nil, ContextOut{}, err
	}
	info, err := s.deps.Sessions.Start(ctx, session.StartRequest{Kind: session.KindContext, Language: lang, Name: in.Name,
		Description: in.Description, Call: callinfo.CallContext(req), Network: network})
	if err != nil {
		if strings.Contains(err.Error(), "already exists") {
			return nil, ContextOut{}, tool.Coded(codeInvalidContextName, "Invalid context name: %v", err)
		}
		return nil, ContextOut{}, tool.Coded(codeCreationFailed, "Failed to create context: %v", err)
	}
	out := contextOut(info)
	out.Message = contextLangName(info.Language) + " context created successfully"
	return tool.JSONText(out), out, nil
}

// contextLanguage is how the context tools name a runtime language.
func contextLanguage(lang string) string {
	if lang == runtime.Node {
		return "javascript"
	}
	return lang
}

func contextLangName(lang string) string {
	if lang == runtime.Node {
		return "JavaScript"
	}
	return "Python"
}

func contextOut(i session.Info) ContextOut {
	return ContextOut{ContextID: i.ID, Name: i.Name, Language: contextLanguage(i.Language), Description: i.Description, CreatedAt: i.StartedAt,
		Status: i.Status, LastUsed: i.LastActivity.UTC()}
}

func (s *toolset) runCode(ctx context.Context, req *mcp.CallToolRequest, in RunCodeIn) (*mcp.CallToolResult, RunCodeOut, error) {
	if in.ContextID == "" || strings.TrimSpace(in.Code) == "" {
		return nil, RunCodeOut{}, tool.Coded(codeInvalidParams, "Invalid arguments: code and context_id are required")
	}
	replace, err := netarg.Replace(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return nil, RunCodeOut{}, err
	}
	obs, finish := callinfo.StreamOutput(ctx, req)
	defer finish()
	res, err := s.deps.Sessions.Exec(ctx, session.ExecRequest{Session: in.ContextID, Code: in.Code, Tool: "run_code", Call: callinfo.CallContext(req), Observe: obs,
		Network: replace})
	if errors.Is(err, session.ErrNotFound) {
		return nil, RunCodeOut{}, tool.Coded(codeContextNotFound, "Context not found: %s", in.ContextID)
	}
	if err != nil {
		return nil, RunCodeOut{}, tool.Coded(codeInvalidParams, "%v", err)
	}
	out := RunCodeOut{Stdout: res.Stdout, Stderr: res.Stderr, Success: res.Success, ExecutionTime: res.ExecutionTime,
		ExecutionID: res.ExecutionID, Status: res.Status, TimedOut: res.TimedOut, ErrorMessage: res.ErrorMessage,
		LogError: res.LogError, Network: res.Network, NetworkMode: res.NetworkMode, Limits: res.Limits,
		EndReason: res.EndReason, Usage: res.Usage}
	return s.deps.Files.WithFiles(ctx, tool.JSONText(out), res), out, nil
}

func (s *toolset) stopContext(ctx context.Context, _ *mcp.CallToolRequest, in ContextIDIn) (*mcp.CallToolResult, StopContextOut, error) {
	if in.ContextID == "" {
		return nil, StopContextOut{}, tool.Coded(codeInvalidParams, "Invalid arguments: context_id is required")
	}
	ci, err := s.deps.Sessions.Stop(ctx, in.ContextID, "stopped", true)
	if errors.Is(err, session.ErrNotFound) {
		return nil, StopContextOut{}, tool.Coded(codeContextNotFound, "Context not found: %s", in.ContextID)
	}
	if err != nil {
		return nil, StopContextOut{}, tool.Coded(codeStopFailed, "%v", err)
	}
	out := StopContextOut{ContextID: ci.ID, Status: "stopped", Message: "Context stopped successfully"}
	return tool.JSONText(out), out, nil
}

func (s *toolset) listContexts(ctx context.Context, _ *mcp.CallToolRequest, _ tool.EmptyIn) (*mcp.CallToolResult, ListContextsOut, error) {
	out := ListContextsOut{Contexts: []ContextOut{}}
	for _, i := range s.deps.Sessions.List(ctx) {
		out.Contexts = append(out.Contexts, contextOut(i))
	}
	if s.deps.Peers != nil {
		var err error
		if out.Contexts, err = s.remoteContexts(ctx, out.Contexts); err != nil {
			return nil, ListContextsOut{}, err
		}
	}
	out.Total = len(out.Contexts)
	return tool.JSONText(out), out, nil
}
