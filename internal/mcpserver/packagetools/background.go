package packagetools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/mcpserver/runstart"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/runs"
)

// installBackground runs the install as a background run: a malformed
// spec, or a target the caller may not install into, is refused now (no
// run); the call returns once the run is recorded, and cancelling the run
// kills the installer.
func (s *toolset) installBackground(ctx context.Context, req *mcp.CallToolRequest, in InstallPackageIn, lang string) (*mcp.CallToolResult, InstallPackageOut, error) {
	var be *packages.BlockedError
	if _, err := s.deps.Packages.Check(lang, in.Package); err != nil && !errors.As(err, &be) {
		return nil, InstallPackageOut{}, packageError(err)
	}
	if _, err := s.packageTarget(ctx, in.SessionID, lang); err != nil {
		return nil, InstallPackageOut{}, err
	}
	v, done, err := runstart.Start(ctx, req, s.deps.Runs, runs.Job{Tool: "install_package",
		Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
			id := execlog.NewID("exec_")
			engine.Started(ctx, id)
			out, err := s.install(ctx, in, lang, obs)
			if err != nil {
				return runs.Outcome{}, err
			}
			out.ExecutionID, out.Status = id, installStatus(ctx, out)
			return runs.Outcome{Status: out.Status, Result: out}, nil
		}})
	switch {
	case err != nil:
		return nil, InstallPackageOut{}, err
	case done != nil:
		out, _ := done.Result.(InstallPackageOut)
		return installText(out), out, nil
	}
	out := InstallPackageOut{Package: in.Package, Language: lang, SessionID: in.SessionID, ExecutionID: v.ExecutionID, Status: runs.StatusRunning}
	return runstart.Text(v.ExecutionID), out, nil
}

// installStatus is a background install's run status: cancelled when its
// run was stopped, else whether the install succeeded.
func installStatus(ctx context.Context, out InstallPackageOut) string {
	switch {
	case runs.Stopped(ctx) != "":
		return engine.StatusCancelled
	case out.Success:
		return engine.StatusSuccess
	}
	return engine.StatusExecutionError
}

// Render is the CallToolResult a foreground install_package call returns,
// for the result (structured content) of one of its background runs.
func Render(result json.RawMessage) (*mcp.CallToolResult, error) {
	var out InstallPackageOut
	if err := json.Unmarshal(result, &out); err != nil {
		return nil, fmt.Errorf("read install_package's result: %w", err)
	}
	res := installText(out)
	res.StructuredContent = result
	return res, nil
}
