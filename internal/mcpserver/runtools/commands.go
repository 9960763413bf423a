package runtools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/shell"
)

// ExecuteCommandIn is execute_command's input: a bash command line.
type ExecuteCommandIn struct {
	Command    string    `json:"command" jsonschema:"bash command line"`
	Cwd        string    `json:"cwd,omitempty" jsonschema:"default: server cwd; relative to it"`
	TimeoutMs  *tool.Int `json:"timeout_ms,omitempty"`
	Background bool      `json:"background,omitempty"`
}

// ExecuteProcessIn is execute_process's input: argv without a shell.
type ExecuteProcessIn struct {
	File       string    `json:"file"`
	Args       []string  `json:"args,omitempty"`
	Input      *string   `json:"input,omitempty" jsonschema:"stdin"`
	Cwd        string    `json:"cwd,omitempty"`
	TimeoutMs  *tool.Int `json:"timeout_ms,omitempty"`
	Background bool      `json:"background,omitempty"`
}

// registerCommands registers execute_command and execute_process. They are
// registered even when ALLOWED_COMMANDS is unset, so an agent gets the
// explanation of how the operator enables them instead of a missing tool.
func (s *toolset) registerCommands() {
	eng := s.deps.Engine
	runner := shell.NewRunner(eng, s.deps.Shell)
	allowed := allowedText(s.deps.Shell.Allow)
	ann := &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(!s.deps.Isolated)}
	tool.Add(s.r, &mcp.Tool{
		Name: "execute_command", Title: "Run shell command", Annotations: ann,
		Description: "Run a bash command line; YAML result, a non-zero exit is normal, a timeout an error. Programs it starts " +
			"must be allowed; builtins like echo, cd, exit always are. " + allowed + ".",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCommandIn) (*mcp.CallToolResult, shell.Result, error) {
		timeout, err := s.commandTimeout(in.TimeoutMs, in.Background)
		if err != nil {
			return nil, shell.Result{}, tool.Invalidf("%v", err)
		}
		run := func(ctx context.Context, obs output.Observer) (shell.Result, error) {
			return runner.Command(ctx, shell.CommandRequest{Command: in.Command, Cwd: in.Cwd, Timeout: timeout, Context: callinfo.CallContext(req), Observe: obs})
		}
		return s.runCommand(ctx, req, "execute_command", in.Background, run)
	})
	tool.Add(s.r, &mcp.Tool{
		Name: "execute_process", Title: "Run program", Annotations: ann,
		Description: "Run an allowed program with argv, no shell; result as execute_command.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ExecuteProcessIn) (*mcp.CallToolResult, shell.Result, error) {
		timeout, err := s.commandTimeout(in.TimeoutMs, in.Background)
		if err != nil {
			return nil, shell.Result{}, tool.Invalidf("%v", err)
		}
		run := func(ctx context.Context, obs output.Observer) (shell.Result, error) {
			return runner.Process(ctx, shell.ProcessRequest{File: in.File, Args: in.Args, Input: in.Input, Cwd: in.Cwd,
				Timeout: timeout, Context: callinfo.CallContext(req), Observe: obs})
		}
		return s.runCommand(ctx, req, "execute_process", in.Background, run)
	})
}

// commandTimeout resolves a command's timeout, a background one's against
// its own cap.
func (s *toolset) commandTimeout(ms *tool.Int, background bool) (time.Duration, error) {
	if background {
		return s.backgroundTimeout(ms, nil)
	}
	return s.deps.Engine.ResolveTimeout(tool.IntPtr(ms), nil)
}

// runCommand runs a command tool's run in the foreground, streaming its
// output as progress, or starts it in the background; the answer is the
// YAML result (in the background: status running and the execution id).
func (s *toolset) runCommand(ctx context.Context, req *mcp.CallToolRequest, name string, background bool,
	run func(context.Context, output.Observer) (shell.Result, error)) (*mcp.CallToolResult, shell.Result, error) {
	if !background {
		obs, finish := callinfo.StreamOutput(ctx, req)
		defer finish()
		return commandResult(run(ctx, obs))
	}
	v, out, err := s.background(ctx, req, runs.Job{Tool: name, Run: func(ctx context.Context, obs output.Observer) (runs.Outcome, error) {
		res, err := run(ctx, obs)
		if err != nil {
			return runs.Outcome{}, commandError(err)
		}
		stoppedNote(ctx, res.Status, &res.ErrorMessage)
		res = timeoutNote(res)
		return runs.Outcome{Status: res.Status, Result: res}, nil
	}})
	switch {
	case err != nil:
		return nil, shell.Result{}, err
	case out != nil:
		res, _ := out.Result.(shell.Result)
		return commandResult(res, nil)
	}
	return commandResult(shell.Result{Status: runs.StatusRunning, ExecutionID: v.ExecutionID}, nil)
}

func allowedText(a *shell.Allowlist) string {
	switch {
	case a.Empty():
		return "None allowed: the operator must set ALLOWED_COMMANDS"
	case a.All():
		return "All allowed"
	}
	return "Allowed: " + strings.Join(a.Entries(), ", ")
}

// commandResult renders a run as YAML text (the command tools' documented
// result). Rejections (err) are tool errors (commandError); a timeout is an
// isError result with the output captured before it; any command that ran
// to an exit status, zero or not, is a normal result.
func commandResult(res shell.Result, err error) (*mcp.CallToolResult, shell.Result, error) {
	if err != nil {
		return nil, shell.Result{}, commandError(err)
	}
	res = timeoutNote(res)
	out, yerr := yaml.Marshal(res)
	if yerr != nil {
		return nil, shell.Result{}, fmt.Errorf("render result: %w", yerr)
	}
	isErr := res.TimedOut || res.Status == "setup_error"
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, res, nil
}

// timeoutNote says in a timed-out command's error message what happened
// to it (once: a result that has the note keeps it).
func timeoutNote(res shell.Result) shell.Result {
	if !res.TimedOut || res.ErrorMessage == nil || strings.HasPrefix(*res.ErrorMessage, timeoutPrefix) {
		return res
	}
	msg := fmt.Sprintf(timeoutPrefix+"the command did not finish within its timeout and was terminated with all its child processes (%s); stdout and stderr hold the output captured before the timeout", *res.ErrorMessage)
	res.ErrorMessage = &msg
	return res
}

const timeoutPrefix = "timeout: "

// commandError is a rejection of the command runner with the code it
// carries (package shell codes its refusals).
func commandError(err error) error { return tool.Classify(err) }
