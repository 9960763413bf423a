package execresult

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
)

// TestText: a clean run reads as its stdout; anything else starts
// with the status line, so a client that reads only content still learns
// the status, exit code and stderr.
func TestText(t *testing.T) {
	zero, one := 0, 1
	msg := "Execution timed out after 1 seconds"
	base := engine.Result{Success: true, Status: engine.StatusSuccess, ExitCode: &zero, ExecutionID: "exec_1", Language: "python",
		DurationMs: 7, Artifacts: []string{}}
	with := func(f func(*engine.Result)) engine.Result { r := base; f(&r); return r }
	for _, tc := range []struct {
		name string
		r    engine.Result
		want string
	}{
		{"clean", with(func(r *engine.Result) { r.Stdout = "1\n" }), "1\n"},
		{"no output", base, "status: success (exit 0) in 7 ms [exec_1, python]\n"},
		{"stderr", with(func(r *engine.Result) { r.Stdout, r.Stderr = "1\n", "warn\n" }),
			"status: success (exit 0) in 7 ms [exec_1, python]\n--- stdout ---\n1\n--- stderr ---\nwarn\n"},
		{"failed", with(func(r *engine.Result) {
			r.Success, r.Status, r.ExitCode, r.Stderr = false, engine.StatusExecutionError, &one, "boom"
		}), "status: execution_error (exit 1) in 7 ms [exec_1, python]\n--- stderr ---\nboom\n"},
		{"timeout", with(func(r *engine.Result) {
			r.Success, r.Status, r.ExitCode, r.ErrorMessage, r.TimedOut, r.Stdout = false, engine.StatusTimeout, nil, &msg, true, "partial"
		}), "status: timeout in 7 ms [exec_1, python]\nerror: " + msg + "\n--- stdout ---\npartial\n"},
		{"artifacts", with(func(r *engine.Result) { r.Stdout, r.Artifacts = "1\n", []string{"a.csv"} }),
			"status: success (exit 0) in 7 ms [exec_1, python]\n--- stdout ---\n1\nartifacts: a.csv\n"},
		{"truncated", with(func(r *engine.Result) { r.Stdout, r.Truncated = "1\n", true }),
			"status: success (exit 0) in 7 ms [exec_1, python]\n--- stdout ---\n1\n(output truncated)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Text(tc.r).Content[0].(*mcp.TextContent).Text
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
