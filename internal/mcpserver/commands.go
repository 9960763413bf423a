package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.yaml.in/yaml/v3"

	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/shell"
)

// ExecuteCommandIn is execute_command's input (seed 002).
type ExecuteCommandIn struct {
	Command   string `json:"command" jsonschema:"shell command line run with bash -c; every command in it (pipelines, lists, $(...), backticks) must be on ALLOWED_COMMANDS"`
	Cwd       string `json:"cwd,omitempty" jsonschema:"working directory; relative paths resolve against the server's working directory (default: the server's working directory); must exist and lie within ALLOWED_CWD_ROOTS when that is set"`
	TimeoutMs *int   `json:"timeout_ms,omitempty" jsonschema:"timeout in milliseconds (default CODEXEC_DEFAULT_TIMEOUT_MS, max CODEXEC_MAX_TIMEOUT_MS); on timeout the whole process tree is killed"`
}

// ExecuteProcessIn is execute_process's input (seed 002): argv without a shell.
type ExecuteProcessIn struct {
	File      string   `json:"file" jsonschema:"program to run (a name found on PATH, or an absolute path); must be on ALLOWED_COMMANDS"`
	Args      []string `json:"args,omitempty" jsonschema:"arguments, passed as-is (no shell interpretation)"`
	Input     *string  `json:"input,omitempty" jsonschema:"text written to the program's standard input"`
	Cwd       string   `json:"cwd,omitempty" jsonschema:"working directory, with the same rules as execute_command"`
	TimeoutMs *int     `json:"timeout_ms,omitempty" jsonschema:"timeout in milliseconds (default CODEXEC_DEFAULT_TIMEOUT_MS, max CODEXEC_MAX_TIMEOUT_MS)"`
}

// registerCommands registers execute_command and execute_process. They are
// registered even when ALLOWED_COMMANDS is unset, so an agent gets the
// explanation of how the operator enables them instead of a missing tool.
func (s *Server) registerCommands() {
	eng := s.deps.Engine
	path := envValue(eng.Options().BaseEnv, "PATH")
	allow := shell.NewAllowlist(s.deps.Config.AllowedCommands, path)
	runner := shell.NewRunner(eng, allow, shell.NewRoots(s.deps.Config.AllowedCwdRoots), eng.Languages().Get(runtime.Bash).Path, path)
	allowed := allowedText(allow)
	ann := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, DestructiveHint: ptr(true), OpenWorldHint: ptr(!eng.Backend().Isolated())}
	}
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "execute_command", Title: "Execute shell command", Annotations: ann("Execute shell command"),
		Description: "Run a shell command line (bash -c) in a project directory and get exit_code, stdout and stderr as YAML. " +
			"Every command of pipelines and lists must be allowed; " + allowed + ". A non-zero exit is a normal result; " +
			"a timeout kills the command and returns an error with the partial output.",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ExecuteCommandIn) (*mcp.CallToolResult, shell.Result, error) {
		timeout, err := eng.ResolveTimeout(in.TimeoutMs, nil)
		if err != nil {
			return nil, shell.Result{}, err
		}
		obs, finish := streamOutput(ctx, req)
		defer finish()
		res, err := runner.Command(ctx, shell.CommandRequest{Command: in.Command, Cwd: in.Cwd, Timeout: timeout, Context: callContext(req), Observe: obs})
		return commandResult(res, err)
	})
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "execute_process", Title: "Execute process", Annotations: ann("Execute process"),
		Description: "Run a program with an argv array (no shell) and optional stdin, and get exit_code, stdout and stderr as YAML. " +
			"file must be allowed; " + allowed + ".",
	}, func(ctx context.Context, req *mcp.CallToolRequest, in ExecuteProcessIn) (*mcp.CallToolResult, shell.Result, error) {
		timeout, err := eng.ResolveTimeout(in.TimeoutMs, nil)
		if err != nil {
			return nil, shell.Result{}, err
		}
		obs, finish := streamOutput(ctx, req)
		defer finish()
		res, err := runner.Process(ctx, shell.ProcessRequest{File: in.File, Args: in.Args, Input: in.Input, Cwd: in.Cwd,
			Timeout: timeout, Context: callContext(req), Observe: obs})
		return commandResult(res, err)
	})
}

func allowedText(a *shell.Allowlist) string {
	switch {
	case a.Empty():
		return "currently NO command is allowed (the operator must set ALLOWED_COMMANDS)"
	case a.All():
		return "currently every command is allowed (ALLOWED_COMMANDS=*)"
	}
	return "allowed commands: " + strings.Join(a.Entries(), ", ")
}

// commandResult renders a run as seed 002's YAML text. Rejections (err) and
// timeouts are tool errors; any command that ran to an exit status, zero or
// not, is a normal result.
func commandResult(res shell.Result, err error) (*mcp.CallToolResult, shell.Result, error) {
	if err != nil {
		return nil, shell.Result{}, err
	}
	if res.TimedOut {
		msg := fmt.Sprintf("timeout: the command did not finish within its timeout and was terminated with all its child processes (%s); stdout and stderr hold the output captured before the timeout", *res.ErrorMessage)
		res.ErrorMessage = &msg
	}
	out, yerr := yaml.Marshal(res)
	if yerr != nil {
		return nil, shell.Result{}, fmt.Errorf("render result: %w", yerr)
	}
	isErr := res.TimedOut || res.Status == "setup_error"
	return &mcp.CallToolResult{IsError: isErr, Content: []mcp.Content{&mcp.TextContent{Text: string(out)}}}, res, nil
}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}
