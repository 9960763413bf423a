// Package execresult is execute_code's result as the tools that return it
// render it (execute_code, send_to_session, run_script, get_run's result):
// its schemas, its compact text, and how those tools fail (a result with
// status setup_error, error_message and the error's code, so readers of
// status and readers of isError both see that nothing ran).
package execresult

import (
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/mcpserver/tool"
)

// Fail returns err as the handler of a tool of execute_code's shape
// returns it; tool.Add renders it in that shape (engine.Result's
// FailureShape).
func Fail(err error) (*mcp.CallToolResult, engine.Result, error) {
	return nil, engine.Result{}, err
}

// Text renders a compact text version of a result of execute_code's
// shape for clients that read only content. A clean run (status success,
// exit 0, nothing on stderr, nothing truncated, no artifacts, no note) is
// just its stdout, as a terminal shows it: every result pays for its text,
// and the status line would only say that nothing went wrong. Any other
// result starts with the status line, so a content-only client still
// reads the status, exit code, stderr and what else matters.
func Text(r engine.Result) *mcp.CallToolResult {
	if clean(r) && r.Stdout != "" {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: r.Stdout}}}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "status: %s", r.Status)
	if r.ExitCode != nil {
		fmt.Fprintf(&b, " (exit %d)", *r.ExitCode)
	}
	fmt.Fprintf(&b, " in %d ms [%s, %s]\n", r.DurationMs, r.ExecutionID, r.Language)
	if r.ErrorMessage != nil {
		fmt.Fprintf(&b, "error: %s\n", *r.ErrorMessage)
	}
	tool.Section(&b, "stdout", r.Stdout)
	tool.Section(&b, "stderr", r.Stderr)
	if len(r.Artifacts) > 0 {
		fmt.Fprintf(&b, "artifacts: %s\n", strings.Join(r.Artifacts, ", "))
	}
	if r.Truncated {
		b.WriteString("(output truncated)\n")
	}
	if r.WorkingDirNote != "" {
		fmt.Fprintf(&b, "working_dir_note: %s\n", r.WorkingDirNote)
	}
	if r.LogError != "" {
		fmt.Fprintf(&b, "log_error: %s\n", r.LogError)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}
}

// clean reports whether r is a run with nothing to say but its stdout.
func clean(r engine.Result) bool {
	return r.Status == engine.StatusSuccess && r.ExitCode != nil && *r.ExitCode == 0 && r.ErrorMessage == nil &&
		r.Stderr == "" && !r.Truncated && len(r.Artifacts) == 0 && r.WorkingDirNote == "" && r.LogError == ""
}

// OutputSchema is execute_code's output schema: engine.Result's, with
// logs nullable. A code-mode result carries logs ([] when none) through a
// pointer to the slice; a pointer to a nil slice marshals as null, which
// the schema admits rather than fail that result.
func OutputSchema() *jsonschema.Schema {
	s := tool.OutputSchema[engine.Result]()
	s.Properties["logs"] = &jsonschema.Schema{AnyOf: []*jsonschema.Schema{s.Properties["logs"], {Type: "null"}}}
	return s
}

// RunOutputSchema is the output schema of the tools that return
// execute_code's shape but never run code mode (send_to_session,
// run_script): execute_code's without code mode's result, logs, metrics
// and error, which such a run never sets, so tools/list does not pay for
// them three times.
func RunOutputSchema() *jsonschema.Schema {
	s := tool.OutputSchema[engine.Result]()
	for _, k := range []string{"result", "logs", "metrics", "error"} {
		delete(s.Properties, k)
	}
	return s
}
