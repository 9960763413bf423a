// Package runstart starts a tool call's work as a background run (package
// runs), the one path every tool with a background form (and so every tool
// that runs as an MCP task) goes through: the run takes over the call's
// execution slot and progress stream, and the call returns once the run is
// recorded as started.
package runstart

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/runs"
)

// Start starts j as a background run of the call req on m. The run takes
// over the call's execution slot and streams its progress to the call's
// client (if it asked) until it ends. The answers are runs.Start's, its
// errors coded for the call (Code). m nil: background runs are off.
func Start(ctx context.Context, req *mcp.CallToolRequest, m *runs.Manager, j runs.Job) (runs.View, *runs.Outcome, error) {
	if m == nil {
		return runs.View{}, nil, tool.Coded(tool.CodeNotEnabled, "background runs are not enabled on this server (the runs toolset, CODEXEC_TOOLSETS)")
	}
	obs, closeProgress := callinfo.StreamDetached(req)
	slot := quota.Keep(ctx)
	j.Observe = obs
	j.Done = func() { slot(); closeProgress() }
	v, out, err := m.Start(ctx, j)
	if err != nil {
		return v, out, Code(err)
	}
	return v, out, nil
}

// Code codes an error of runs.Start: too many runs, a server shutting
// down, or the job's own refusal.
func Code(err error) error {
	switch {
	case errors.Is(err, runs.ErrLimit):
		return tool.Coded(tool.CodeLimitExceeded, "%v", err)
	case errors.Is(err, runs.ErrClosed):
		return tool.Coded(tool.CodeServerNotReady, "%v", err)
	}
	return tool.Classify(err)
}

// Text is the text of a call that started background run id.
func Text(id string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
		Text: "status: running in the background as " + id + "; get_run reads its output and result, cancel_run stops it"}}}
}

// StoppedNote puts why a cancelled run was stopped (cancel_run, a task's
// cancel, shutdown) in its error message.
func StoppedNote(ctx context.Context, status string, msg **string) {
	if why := runs.Stopped(ctx); why != "" && status == engine.StatusCancelled {
		*msg = &why
	}
}
