package runtools

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/execresult"
	"github.com/codexec/codexec/internal/mcpserver/netarg"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/scripts"
)

// SaveScriptIn is save_script's input.
type SaveScriptIn struct {
	Name              string   `json:"name"`
	Description       string   `json:"description,omitempty"`
	Language          string   `json:"language"`
	Code              string   `json:"code" jsonschema:"run_script args are argv"`
	Tags              []string `json:"tags,omitempty"`
	Packages          []string `json:"packages,omitempty" jsonschema:"checked by run_script"`
	SourceExecutionID string   `json:"source_execution_id,omitempty"`
}

// SaveScriptOut is save_script's result.
type SaveScriptOut struct {
	Success  bool      `json:"success"`
	ScriptID string    `json:"script_id"` // stable across versions
	Name     string    `json:"name"`
	Path     string    `json:"path"`    // absolute path of the code file
	Version  int       `json:"version"` // 1 for a new script
	SavedAt  time.Time `json:"saved_at"`
}

// GetScriptIn is get_script's input.
type GetScriptIn struct {
	Name    string `json:"name"`
	Version int    `json:"version,omitempty" jsonschema:"default: current"`
}

// GetScriptOut is get_script's result.
type GetScriptOut struct {
	Success           bool       `json:"success"`
	ScriptID          string     `json:"script_id"`
	Name              string     `json:"name"`
	Description       string     `json:"description"`
	Language          string     `json:"language"`
	Code              string     `json:"code"`
	Tags              []string   `json:"tags"`
	Packages          []string   `json:"packages"`
	SourceExecutionID string     `json:"source_execution_id,omitempty"`
	Path              string     `json:"path"`
	Version           int        `json:"version"`
	Versions          []int      `json:"versions"` // every stored version, oldest first; the last is current
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at"` // when this version was saved
	LastRunAt         *time.Time `json:"last_run_at"`
	RunCount          int        `json:"run_count"`
	LastRunSuccess    *bool      `json:"last_run_success"`
}

// ListScriptsIn is list_scripts' input.
type ListScriptsIn struct {
	Language string `json:"language,omitempty"`
	Tag      string `json:"tag,omitempty"`
}

// ScriptSummary is one script in list/search results.
type ScriptSummary struct {
	Name        string     `json:"name"`
	Description string     `json:"description"`
	Language    string     `json:"language"`
	Tags        []string   `json:"tags"`
	Version     int        `json:"version"`
	RunCount    int        `json:"run_count"`
	LastRunAt   *time.Time `json:"last_run_at"`
	Relevance   string     `json:"relevance,omitempty"` // search only: name_match, tag_match, description_match or language_match
}

// ListScriptsOut is list_scripts' result.
type ListScriptsOut struct {
	Scripts    []ScriptSummary `json:"scripts"`
	TotalCount int             `json:"total_count"`
}

// SearchScriptsIn is search_scripts' input.
type SearchScriptsIn struct {
	Query string `json:"query" jsonschema:"any word matches"`
}

// SearchScriptsOut is search_scripts' result.
type SearchScriptsOut struct {
	Results    []ScriptSummary `json:"results"`
	TotalCount int             `json:"total_count"`
}

// RunScriptIn is run_script's input.
type RunScriptIn struct {
	Name       string     `json:"name"`
	Args       []string   `json:"args,omitempty" jsonschema:"argv"`
	TimeoutMs  *tool.Int  `json:"timeout_ms,omitempty"`
	Files      []string   `json:"files,omitempty" jsonschema:"upload_ids to place first"`
	Background bool       `json:"background,omitempty"`
	Network    *netarg.In `json:"network,omitempty" jsonschema:"as execute_code's"`
}

func (s *toolset) registerScripts() {
	if s.deps.Scripts == nil {
		return
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}
	tool.Add(s.r, &mcp.Tool{Name: "save_script", Title: "Save script", Description: "Save code as a named script; saving a name again adds a version.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(false), OpenWorldHint: tool.Ptr(false)}}, s.saveScript)
	tool.Add(s.r, &mcp.Tool{Name: "get_script", Title: "Get script", Description: "Get a script's code and metadata.", Annotations: ro}, s.getScript)
	tool.Add(s.r, &mcp.Tool{Name: "list_scripts", Title: "List scripts", Description: "List saved scripts.", Annotations: ro}, s.listScripts)
	tool.Add(s.r, &mcp.Tool{Name: "search_scripts", Title: "Search scripts", Description: "Search saved scripts.", Annotations: ro}, s.searchScripts)
	tool.Add(s.r, &mcp.Tool{Name: "run_script", Title: "Run script", OutputSchema: execresult.RunOutputSchema(),
		Description: "Run a saved script; result as execute_code.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true),
			OpenWorldHint: tool.Ptr(s.openWorld())}}, s.runScript)
}

func (s *toolset) saveScript(ctx context.Context, _ *mcp.CallToolRequest, in SaveScriptIn) (*mcp.CallToolResult, SaveScriptOut, error) {
	store, err := s.deps.Scripts.Libraries.For(ctx)
	if err != nil {
		return nil, SaveScriptOut{}, scriptError(err)
	}
	sc, err := store.Save(ctx, scripts.SaveInput{Name: in.Name, Description: in.Description, Language: in.Language,
		Code: in.Code, Tags: in.Tags, Packages: in.Packages, SourceExecutionID: in.SourceExecutionID})
	if err != nil {
		return nil, SaveScriptOut{}, scriptError(err)
	}
	return nil, SaveScriptOut{Success: true, ScriptID: sc.ScriptID, Name: sc.Name, Path: sc.Path, Version: sc.Version,
		SavedAt: sc.UpdatedAt}, nil
}

func (s *toolset) getScript(ctx context.Context, _ *mcp.CallToolRequest, in GetScriptIn) (*mcp.CallToolResult, GetScriptOut, error) {
	store, err := s.deps.Scripts.Libraries.For(ctx)
	if err != nil {
		return nil, GetScriptOut{}, scriptError(err)
	}
	sc, err := store.Get(ctx, in.Name, in.Version)
	if err != nil {
		return nil, GetScriptOut{}, scriptError(err)
	}
	m := sc.Meta
	return nil, GetScriptOut{Success: true, ScriptID: m.ScriptID, Name: m.Name, Description: m.Description,
		Language: m.Language, Code: sc.Code, Tags: m.Tags, Packages: m.Packages, SourceExecutionID: m.SourceExecutionID,
		Path: sc.Path, Version: m.Version, Versions: sc.Versions, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		LastRunAt: m.LastRunAt, RunCount: m.RunCount, LastRunSuccess: m.LastRunSuccess}, nil
}

func (s *toolset) listScripts(ctx context.Context, _ *mcp.CallToolRequest, in ListScriptsIn) (*mcp.CallToolResult, ListScriptsOut, error) {
	lang := ""
	if in.Language != "" {
		l, err := runtime.Normalize(in.Language)
		if err != nil {
			return nil, ListScriptsOut{}, tool.Coded(tool.CodeInvalidLanguage, "%v", err)
		}
		lang = l
	}
	store, err := s.deps.Scripts.Libraries.For(ctx)
	if err != nil {
		return nil, ListScriptsOut{}, scriptError(err)
	}
	ms, err := store.List(ctx, lang, in.Tag)
	if err != nil {
		return nil, ListScriptsOut{}, scriptError(err)
	}
	out := ListScriptsOut{Scripts: []ScriptSummary{}, TotalCount: len(ms)}
	for _, m := range ms {
		out.Scripts = append(out.Scripts, summary(m, ""))
	}
	return nil, out, nil
}

func (s *toolset) searchScripts(ctx context.Context, _ *mcp.CallToolRequest, in SearchScriptsIn) (*mcp.CallToolResult, SearchScriptsOut, error) {
	store, err := s.deps.Scripts.Libraries.For(ctx)
	if err != nil {
		return nil, SearchScriptsOut{}, scriptError(err)
	}
	ms, err := store.Search(ctx, in.Query)
	if err != nil {
		return nil, SearchScriptsOut{}, tool.Invalidf("%v", err)
	}
	out := SearchScriptsOut{Results: []ScriptSummary{}, TotalCount: len(ms)}
	for _, m := range ms {
		out.Results = append(out.Results, summary(m.Meta, m.Relevance))
	}
	return nil, out, nil
}

func summary(m scripts.Meta, rel string) ScriptSummary {
	return ScriptSummary{Name: m.Name, Description: m.Description, Language: m.Language, Tags: m.Tags,
		Version: m.Version, RunCount: m.RunCount, LastRunAt: m.LastRunAt, Relevance: rel}
}

func (s *toolset) runScript(ctx context.Context, req *mcp.CallToolRequest, in RunScriptIn) (*mcp.CallToolResult, engine.Result, error) {
	if in.Background {
		return s.runScriptBackground(ctx, req, in)
	}
	timeout, err := s.deps.Engine.ResolveTimeout(tool.IntPtr(in.TimeoutMs), nil)
	if err != nil {
		return execresult.Fail(err)
	}
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	prepare, err := s.deps.Files.StageUploads(ctx, in.Files)
	if err != nil {
		return execresult.Fail(err)
	}
	obs, finish := callinfo.StreamOutput(ctx, req)
	defer finish()
	res, err := s.deps.Scripts.Run(ctx, scripts.RunRequest{Name: in.Name, Args: in.Args, Timeout: timeout,
		Context: callinfo.CallContext(req), Observe: obs, Prepare: prepare, Network: network})
	if err != nil {
		return execresult.Fail(scriptError(err))
	}
	return s.deps.Files.WithFiles(ctx, execresult.Text(res), res), res, nil
}

// runScriptBackground starts run_script's run in the background; the
// script is looked up and its packages checked before the call returns.
func (s *toolset) runScriptBackground(ctx context.Context, req *mcp.CallToolRequest, in RunScriptIn) (*mcp.CallToolResult, engine.Result, error) {
	timeout, err := s.backgroundTimeout(in.TimeoutMs, nil)
	if err != nil {
		return execresult.Fail(err)
	}
	network, err := netarg.Resolve(ctx, s.deps.Egress, in.Network)
	if err != nil {
		return execresult.Fail(err)
	}
	prepare, err := s.deps.Files.StageUploads(ctx, in.Files)
	if err != nil {
		return execresult.Fail(err)
	}
	call := callinfo.CallContext(req)
	v, out, err := s.background(ctx, req, runs.Job{Tool: "run_script", Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
		res, err := s.deps.Scripts.Run(ctx, scripts.RunRequest{Name: in.Name, Args: in.Args, Timeout: timeout,
			Context: call, Observe: obs, Prepare: prepare, Network: network})
		if err != nil {
			return runs.Outcome{}, scriptError(err)
		}
		return execOutcome(ctx, res, nil)
	}})
	return execAnswer(v, out, err, "")
}

// scriptError labels library errors with error codes (tool.Coded), so an
// agent can tell a missing script from a storage failure.
func scriptError(err error) error {
	var mp *scripts.MissingPackagesError
	var te *tool.Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.As(err, &mp):
		return tool.Coded(tool.CodeMissingPackages, "%v", err)
	case errors.Is(err, scripts.ErrNotFound):
		return tool.Coded(tool.CodeScriptNotFound, "%v", err)
	case errors.Is(err, scripts.ErrPreflight):
		return tool.Coded(tool.CodePreflightFailed, "%v", err)
	case errors.Is(err, scripts.ErrInvalid):
		return tool.Invalidf("%v", err)
	}
	if te := tool.Classify(err); te.Code != tool.CodeInternal {
		return te
	}
	return tool.Coded(tool.CodeScriptStorage, "%v", err)
}
