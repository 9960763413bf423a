package runtools_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/mcpserver/filetools"
	"github.com/codexec/codexec/internal/mcpserver/runtools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// connect serves execute_code and the files toolset over an engine on the fake backend and
// returns a client session talking to it through the SDK's in-memory
// transports: the whole adapter path (argument decoding, the handler, the
// result's rendering and schema check) runs, and nothing is executed.
func connect(t *testing.T, script sandboxfake.Script) (*mcp.ClientSession, *sandboxfake.Backend) {
	t.Helper()
	e, b := tooltest.FakeEngine(t, script, true)
	store, err := files.NewDirStore(t.TempDir(), files.DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	fs := filetools.New(filetools.Deps{Config: config.Config{MaxUploadBytes: 1 << 20}, Files: store})
	srv := mcp.NewServer(&mcp.Implementation{Name: "runtools-test", Version: "0"}, nil)
	r := tool.NewRegistrar(srv)
	runtools.RegisterExec(r, runtools.Deps{Engine: e, Files: fs, Isolated: true})
	fs.Register(r)
	return tooltest.Connect(t, srv), b
}

// execOut is the part of execute_code's structured result these tests pin.
type execOut struct {
	Success  bool   `json:"success"`
	Status   string `json:"status"`
	Language string `json:"language"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode *int   `json:"exit_code"`
	TimedOut bool   `json:"timed_out"`
	Code     string `json:"code"`
}

// TestExecuteCodeThroughMCP: what a client sees of execute_code for each way
// a call can end. A program that fails or times out is a successful call
// (isError false) whose status says so; bad input is an isError result with
// INVALID_PARAMS and starts nothing.
func TestExecuteCodeThroughMCP(t *testing.T) {
	exit := func(code int) *int { return &code }
	for _, tc := range []struct {
		name      string
		args      map[string]any
		outcome   sandboxfake.Outcome
		wantError bool
		want      execOut
		wantRuns  int
	}{
		{"success", map[string]any{"language": "python", "code": "print(6)"}, sandboxfake.Outcome{Stdout: "6\n"}, false,
			execOut{Success: true, Status: "success", Language: "python", Stdout: "6\n", ExitCode: exit(0)}, 1},
		{"program failure is a result", map[string]any{"language": "bash", "code": "exit 3"},
			sandboxfake.Outcome{Stderr: "boom\n", Exit: sandbox.Exit{Code: 3}}, false,
			execOut{Status: "execution_error", Language: "bash", Stderr: "boom\n", ExitCode: exit(3)}, 1},
		{"timeout", map[string]any{"language": "node", "code": "for(;;){}", "timeout_ms": 100},
			sandboxfake.Outcome{Duration: time.Hour}, false,
			execOut{Status: "timeout", Language: "node", TimedOut: true}, 1},
		{"timeout_ms of the wrong type", map[string]any{"language": "python", "code": "x", "timeout_ms": "soon"},
			sandboxfake.Outcome{}, true, execOut{Status: "setup_error", Code: "INVALID_PARAMS"}, 0},
		{"timeout_ms and timeout both", map[string]any{"language": "python", "code": "x", "timeout_ms": 1000, "timeout": 1},
			sandboxfake.Outcome{}, true, execOut{Status: "setup_error", Code: "INVALID_PARAMS"}, 0},
		{"timeout past the maximum", map[string]any{"language": "python", "code": "x", "timeout_ms": 3_600_000},
			sandboxfake.Outcome{}, true, execOut{Status: "setup_error", Code: "INVALID_PARAMS"}, 0},
		{"bad network rule", map[string]any{"language": "python", "code": "x", "network": map[string]any{"allow": []string{"http://x/y z"}}},
			sandboxfake.Outcome{}, true, execOut{Status: "setup_error", Code: "INVALID_PARAMS"}, 0},
		{"unknown language", map[string]any{"language": "cobol", "code": "x"},
			sandboxfake.Outcome{}, true, execOut{Status: "setup_error", Code: "INVALID_LANGUAGE"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, b := connect(t, func(sandbox.Spec) sandboxfake.Outcome { return tc.outcome })
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code", Arguments: tc.args})
			if err != nil {
				t.Fatalf("call: %v", err)
			}
			if res.IsError != tc.wantError {
				t.Errorf("isError %v, want %v; content %s", res.IsError, tc.wantError, tooltest.Text(res))
			}
			var got execOut
			tooltest.Decode(t, res, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got)\n%s\ncontent %s", diff, tooltest.Text(res))
			}
			if n := len(b.Specs()); n != tc.wantRuns {
				t.Errorf("%d runs started, want %d", n, tc.wantRuns)
			}
		})
	}
}

// TestStartFailureIsAResult: when the sandbox cannot start the program,
// execute_code answers a normal result (isError false) with status
// setup_error and the backend's reason, as for any run that did not
// happen; no exit code is invented.
func TestStartFailureIsAResult(t *testing.T) {
	cs, b := connect(t, func(sandbox.Spec) sandboxfake.Outcome {
		return sandboxfake.Outcome{StartErr: errors.New("clone: no more pids")}
	})
	res := tooltest.Call(t, cs, "execute_code", map[string]any{"language": "python", "code": "1"})
	var got struct {
		execOut
		ErrorMessage string `json:"error_message"`
	}
	tooltest.Decode(t, res, &got)
	want := []any{false, "setup_error", (*int)(nil), true, 1}
	if diff := cmp.Diff(want, []any{res.IsError, got.Status, got.ExitCode, strings.Contains(got.ErrorMessage, "no more pids"), len(b.Specs())}); diff != "" {
		t.Errorf("[isError status exit_code names-the-reason runs] (-want +got)\n%s\n%s", diff, tooltest.Text(res))
	}
}
