// Package packagetools is the MCP face of package installs: the packages
// toolset (install_package), which installs a pip or npm package for every
// run or into one session, through packages.Installer's checks (blocklist,
// wheels only, no install scripts).
package packagetools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/tenant"
)

// SessionPackages is what the sessions service provides so install_package
// can install into one session (Deps.SessionPackages). Both methods must be
// safe for concurrent use.
type SessionPackages interface {
	// PackageTarget returns the host directory that installs for sessionID
	// and lang (packages.Python or packages.Node) go into, creating it if
	// needed. The directory must already be visible to the session's
	// interpreter, read-only: for python the directory itself is on sys.path
	// (pip --target); for node, <dir>/node_modules is on NODE_PATH (npm
	// --prefix). An unknown or closed session is an error (its message is
	// shown to the agent); a language the session cannot use may be refused.
	// Both resolve sessionID for ctx's principal (tenant.From): another
	// principal's session is unknown.
	PackageTarget(ctx context.Context, sessionID, lang string) (dir string, err error)
	// RecordPackage is called after every install attempt into the session:
	// on success it adds name to the session's packages_installed; in all
	// cases it appends a package_install entry (package, version,
	// success) to the session log. version is empty when success is false.
	RecordPackage(ctx context.Context, sessionID, lang, name, version string, success bool) error
}

// InstallPackageIn is install_package's input.
type InstallPackageIn struct {
	SessionID  string `json:"session_id,omitempty" jsonschema:"omit for all runs"`
	Package    string `json:"package" jsonschema:"e.g. pandas==2.2.1, lodash@4"`
	Language   string `json:"language" jsonschema:"python|node"`
	Background bool   `json:"background,omitempty"`
}

// InstallPackageOut is install_package's output. A failed install is a
// normal result with success false and the installer's output.
type InstallPackageOut struct {
	Success       bool   `json:"success"`
	Package       string `json:"package"` // name without version spec
	Version       string `json:"version"` // installed version; empty when the install failed
	Language      string `json:"language"`
	SessionID     string `json:"session_id,omitempty"` // absent for a global install
	InstallOutput string `json:"install_output"`       // head+tail trimmed
	Error         string `json:"error,omitempty"`      // why the install failed
	DurationMs    int64  `json:"duration_ms"`
	LogError      string `json:"log_error,omitempty"` // the session log could not record the install, and why
	// A background install's (background: true, an MCP task): its run's
	// id, and its status (running in the call's answer; then success,
	// execution_error when the install failed, or cancelled).
	ExecutionID string `json:"execution_id,omitempty"`
	Status      string `json:"status,omitempty"`
}

// Deps are the services install_package calls.
type Deps struct {
	Packages        *packages.Installer // nil: no install_package
	SessionPackages SessionPackages     // per-session installs; nil: only global ones
	Runs            *runs.Manager       // background installs (and so MCP tasks); nil: none
}

type toolset struct {
	deps Deps
}

// Register adds install_package when an installer is wired.
func Register(r *tool.Registrar, d Deps) {
	if d.Packages == nil {
		return
	}
	s := &toolset{deps: d}
	tool.Add(r, &mcp.Tool{
		Name: "install_package", Title: "Install package",
		Description: "Install a pip or npm package for sandboxed code (wheels only, no install scripts; blocklist applies).",
		// Destructive: installing a different version replaces the one other runs (or the session) use.
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), IdempotentHint: true, OpenWorldHint: tool.Ptr(true)},
	}, s.installPackage)
}

func (s *toolset) installPackage(ctx context.Context, req *mcp.CallToolRequest, in InstallPackageIn) (*mcp.CallToolResult, InstallPackageOut, error) {
	lang, err := packageLanguage(in.Language)
	if err != nil {
		return nil, InstallPackageOut{}, tool.Coded(tool.CodeInvalidLanguage, "%v", err)
	}
	if in.Background {
		return s.installBackground(ctx, req, in, lang)
	}
	obs, finish := callinfo.StreamOutput(ctx, req)
	defer finish()
	out, err := s.install(ctx, in, lang, obs)
	if err != nil {
		return nil, InstallPackageOut{}, err
	}
	return installText(out), out, nil
}

// install checks and installs in.Package for lang, recording it in the
// session it goes into. A blocked package is a normal result (a refusal,
// not a malformed call): nothing is installed.
func (s *toolset) install(ctx context.Context, in InstallPackageIn, lang string, obs output.Observer) (InstallPackageOut, error) {
	var out InstallPackageOut
	if spec, err := s.deps.Packages.Check(lang, in.Package); err != nil {
		var be *packages.BlockedError
		if errors.As(err, &be) {
			return InstallPackageOut{Success: false, Package: spec.Name, Language: lang, SessionID: in.SessionID, Error: err.Error()}, nil
		}
		return out, packageError(err)
	}
	dir, err := s.packageTarget(ctx, in.SessionID, lang)
	if err != nil {
		return out, err // coded by packageTarget
	}
	res, err := s.deps.Packages.Install(ctx, packages.Request{Language: lang, Package: in.Package, Dir: dir, Observe: obs})
	if err != nil {
		return out, packageError(err)
	}
	var logErr string
	if in.SessionID != "" {
		// A log that cannot be written (full disk) does not undo the
		// install: the result says so instead of failing the call.
		var we *execlog.WriteError
		err := s.deps.SessionPackages.RecordPackage(ctx, in.SessionID, lang, res.Spec.Name, res.Version, res.Success)
		if errors.As(err, &we) {
			logErr = err.Error()
		} else if err != nil {
			return out, tool.Coded(tool.CodeInternal, "package installed but the session could not record it: %v", err)
		}
	}
	return InstallPackageOut{Success: res.Success, Package: res.Spec.Name, Version: res.Version, Language: lang,
		SessionID: in.SessionID, InstallOutput: res.Output, Error: res.Error, DurationMs: res.Duration.Milliseconds(), LogError: logErr}, nil
}

// packageTarget is the session's package directory, or the global one.
// Global installs change what every principal's runs import, so only the
// local principal (the operator's own stdio client) may make them.
func (s *toolset) packageTarget(ctx context.Context, sessionID, lang string) (string, error) {
	if sessionID == "" && tenant.From(ctx) != tenant.Local {
		return "", tool.Coded(tool.CodeNotAllowed, "global installs are reserved to the server's operator; pass session_id to install into one of your sessions")
	}
	if sessionID == "" {
		if dir := s.deps.Packages.GlobalDir(lang); dir != "" {
			return dir, nil
		}
		return "", tool.Coded(tool.CodeNotEnabled, "global package installs are not configured on this server (CODEXEC_PACKAGES_DIR); pass session_id")
	}
	if s.deps.SessionPackages == nil {
		return "", tool.Coded(tool.CodeNotEnabled, "session_id given but sessions are not available on this server; omit session_id to install globally")
	}
	dir, err := s.deps.SessionPackages.PackageTarget(ctx, sessionID, lang)
	if err != nil {
		if te := tool.Classify(err); te.Code != tool.CodeInternal {
			return "", te
		}
		return "", tool.Coded(tool.CodeSessionNotFound, "%v", err)
	}
	return dir, nil
}

func packageLanguage(lang string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(lang)) {
	case "python", "python3", "py", "pip":
		return packages.Python, nil
	case "node", "javascript", "js", "nodejs", "npm", "typescript", "ts":
		return packages.Node, nil
	}
	return "", fmt.Errorf("language %q cannot install packages: use python (pip) or node (npm)", lang)
}

func packageError(err error) error {
	var be *packages.BlockedError
	if errors.As(err, &be) {
		return tool.Coded(tool.CodePackageBlocked, "%v", err)
	}
	return tool.Coded(tool.CodeInvalidParams, "%v", err)
}

func installText(o InstallPackageOut) *mcp.CallToolResult {
	var b strings.Builder
	scope := "globally"
	if o.SessionID != "" {
		scope = "into session " + o.SessionID
	}
	if o.Success {
		fmt.Fprintf(&b, "installed %s %s (%s) %s in %d ms\n", o.Package, o.Version, o.Language, scope, o.DurationMs)
	} else {
		fmt.Fprintf(&b, "install of %s (%s) %s FAILED: %s\n", o.Package, o.Language, scope, o.Error)
	}
	tool.Section(&b, "install output", o.InstallOutput)
	if o.LogError != "" {
		fmt.Fprintf(&b, "log_error: %s\n", o.LogError)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}
