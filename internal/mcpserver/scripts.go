package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/scripts"
)

// SaveScriptIn is save_script's input (seed 000).
type SaveScriptIn struct {
	Name              string   `json:"name" jsonschema:"script name: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 100 characters; saving an existing name keeps the previous version"`
	Description       string   `json:"description,omitempty" jsonschema:"what the script does (searched by search_scripts)"`
	Language          string   `json:"language" jsonschema:"python | node (javascript, js) | typescript (ts) | bash"`
	Code              string   `json:"code" jsonschema:"the script's source code; run_script passes its args as argv (sys.argv[1:], process.argv.slice(2), $1…)"`
	Tags              []string `json:"tags,omitempty" jsonschema:"tags for list_scripts/search_scripts"`
	Packages          []string `json:"packages,omitempty" jsonschema:"packages the script needs; run_script checks they are installed first"`
	SourceExecutionID string   `json:"source_execution_id,omitempty" jsonschema:"execution (exec_…) where this code was developed"`
}

// SaveScriptOut is save_script's result.
type SaveScriptOut struct {
	Success  bool      `json:"success"`
	ScriptID string    `json:"script_id" jsonschema:"stable id of the script (kept across versions)"`
	Name     string    `json:"name"`
	Path     string    `json:"path" jsonschema:"absolute path of the code file"`
	Version  int       `json:"version" jsonschema:"version number of what was saved (1 for a new script)"`
	SavedAt  time.Time `json:"saved_at"`
}

// GetScriptIn is get_script's input.
type GetScriptIn struct {
	Name    string `json:"name" jsonschema:"script name"`
	Version int    `json:"version,omitempty" jsonschema:"an earlier version number to return (default: the current version)"`
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
	Version           int        `json:"version" jsonschema:"version returned"`
	Versions          []int      `json:"versions" jsonschema:"every stored version, oldest first; the last is current"`
	CreatedAt         time.Time  `json:"created_at"`
	UpdatedAt         time.Time  `json:"updated_at" jsonschema:"when this version was saved"`
	LastRunAt         *time.Time `json:"last_run_at"`
	RunCount          int        `json:"run_count"`
	LastRunSuccess    *bool      `json:"last_run_success"`
}

// ListScriptsIn is list_scripts' input.
type ListScriptsIn struct {
	Language string `json:"language,omitempty" jsonschema:"only scripts in this language"`
	Tag      string `json:"tag,omitempty" jsonschema:"only scripts with this tag (case-insensitive)"`
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
	Relevance   string     `json:"relevance,omitempty" jsonschema:"search only: strongest match (name_match, tag_match, description_match, language_match)"`
}

// ListScriptsOut is list_scripts' result.
type ListScriptsOut struct {
	Scripts    []ScriptSummary `json:"scripts"`
	TotalCount int             `json:"total_count"`
}

// SearchScriptsIn is search_scripts' input.
type SearchScriptsIn struct {
	Query string `json:"query" jsonschema:"words to look for in names, tags, descriptions and languages (any word matches; best matches first)"`
}

// SearchScriptsOut is search_scripts' result.
type SearchScriptsOut struct {
	Results    []ScriptSummary `json:"results"`
	TotalCount int             `json:"total_count"`
}

// RunScriptIn is run_script's input.
type RunScriptIn struct {
	Name      string   `json:"name" jsonschema:"saved script to run (current version)"`
	Args      []string `json:"args,omitempty" jsonschema:"command-line arguments passed to the script as argv"`
	TimeoutMs *int     `json:"timeout_ms,omitempty" jsonschema:"timeout in milliseconds (default CODEXEC_DEFAULT_TIMEOUT_MS)"`
	Files     []string `json:"files,omitempty" jsonschema:"upload_ids to place first"`
}

func (s *Server) registerScripts() {
	if s.deps.Scripts == nil {
		return
	}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "save_script", Title: "Save script",
		Description: "Save code as a reusable named script with description, tags and required packages. Saving an existing name creates a new version and keeps the old one.",
		Annotations: &mcp.ToolAnnotations{Title: "Save script", DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}}, s.saveScript)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "get_script", Title: "Get script",
		Description: "Get a saved script's code and metadata by name, optionally an earlier version.", Annotations: ro}, s.getScript)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "list_scripts", Title: "List scripts",
		Description: "List saved scripts with descriptions and tags, optionally filtered by language and tag.", Annotations: ro}, s.listScripts)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "search_scripts", Title: "Search scripts",
		Description: "Search saved scripts by name, description, tags or language.", Annotations: ro}, s.searchScripts)
	mcp.AddTool(s.mcp, &mcp.Tool{Name: "run_script", Title: "Run script",
		Description: "Run a saved script by name with optional argv. Output has the same shape as execute_code. Fails before running if a required package is missing, naming the install_package call to make.",
		Annotations: &mcp.ToolAnnotations{Title: "Run script", DestructiveHint: ptr(true),
			OpenWorldHint: ptr(!s.deps.Engine.Backend().Isolated())}}, s.runScript)
}

func (s *Server) saveScript(_ context.Context, _ *mcp.CallToolRequest, in SaveScriptIn) (*mcp.CallToolResult, SaveScriptOut, error) {
	sc, err := s.deps.Scripts.Store.Save(scripts.SaveInput{Name: in.Name, Description: in.Description, Language: in.Language,
		Code: in.Code, Tags: in.Tags, Packages: in.Packages, SourceExecutionID: in.SourceExecutionID})
	if err != nil {
		return nil, SaveScriptOut{}, scriptError(err)
	}
	return nil, SaveScriptOut{Success: true, ScriptID: sc.ScriptID, Name: sc.Name, Path: sc.Path, Version: sc.Version,
		SavedAt: sc.UpdatedAt}, nil
}

func (s *Server) getScript(_ context.Context, _ *mcp.CallToolRequest, in GetScriptIn) (*mcp.CallToolResult, GetScriptOut, error) {
	sc, err := s.deps.Scripts.Store.Get(in.Name, in.Version)
	if err != nil {
		return nil, GetScriptOut{}, scriptError(err)
	}
	m := sc.Meta
	return nil, GetScriptOut{Success: true, ScriptID: m.ScriptID, Name: m.Name, Description: m.Description,
		Language: m.Language, Code: sc.Code, Tags: m.Tags, Packages: m.Packages, SourceExecutionID: m.SourceExecutionID,
		Path: sc.Path, Version: m.Version, Versions: sc.Versions, CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt,
		LastRunAt: m.LastRunAt, RunCount: m.RunCount, LastRunSuccess: m.LastRunSuccess}, nil
}

func (s *Server) listScripts(_ context.Context, _ *mcp.CallToolRequest, in ListScriptsIn) (*mcp.CallToolResult, ListScriptsOut, error) {
	lang := ""
	if in.Language != "" {
		l, err := runtime.Normalize(in.Language)
		if err != nil {
			return nil, ListScriptsOut{}, codedError("INVALID_LANGUAGE", "%v", err)
		}
		lang = l
	}
	ms, err := s.deps.Scripts.Store.List(lang, in.Tag)
	if err != nil {
		return nil, ListScriptsOut{}, err
	}
	out := ListScriptsOut{Scripts: []ScriptSummary{}, TotalCount: len(ms)}
	for _, m := range ms {
		out.Scripts = append(out.Scripts, summary(m, ""))
	}
	return nil, out, nil
}

func (s *Server) searchScripts(_ context.Context, _ *mcp.CallToolRequest, in SearchScriptsIn) (*mcp.CallToolResult, SearchScriptsOut, error) {
	ms, err := s.deps.Scripts.Store.Search(in.Query)
	if err != nil {
		return nil, SearchScriptsOut{}, codedError("INVALID_PARAMS", "%v", err)
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

func (s *Server) runScript(ctx context.Context, req *mcp.CallToolRequest, in RunScriptIn) (*mcp.CallToolResult, engine.Result, error) {
	timeout, err := s.deps.Engine.ResolveTimeout(in.TimeoutMs, nil)
	if err != nil {
		return invalid(err.Error())
	}
	if ctx, err = s.stageUploads(ctx, in.Files); err != nil {
		return invalid(err.Error())
	}
	res, err := s.deps.Scripts.Run(ctx, in.Name, in.Args, timeout, callContext(req))
	if err != nil {
		return invalid(scriptError(err).Error())
	}
	return s.withFiles(ctx, resultText(res), res), res, nil
}

// scriptError labels library errors with seed 001-style codes.
func scriptError(err error) error {
	var mp *scripts.MissingPackagesError
	switch {
	case errors.As(err, &mp):
		return codedError("MISSING_PACKAGES", "%v", err)
	case errors.Is(err, scripts.ErrNotFound):
		return codedError("SCRIPT_NOT_FOUND", "%v", err)
	case errors.Is(err, scripts.ErrPreflight):
		return codedError("PREFLIGHT_FAILED", "%v", err)
	case errors.Is(err, scripts.ErrInvalid):
		return codedError("INVALID_PARAMS", "%v", err)
	}
	return codedError("SCRIPT_STORAGE_ERROR", "%v", err)
}
