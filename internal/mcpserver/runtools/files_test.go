package runtools_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// catInput is a script whose run prints the workspace's input.csv, as
// `cat input.csv` would: what the run would have found there.
func catInput(spec sandbox.Spec) sandboxfake.Outcome {
	b, err := os.ReadFile(filepath.Join(spec.Dir, "input.csv"))
	if err != nil {
		return sandboxfake.Outcome{Stderr: err.Error(), Exit: sandbox.Exit{Code: 1}}
	}
	return sandboxfake.Outcome{Stdout: string(b)}
}

// TestStagedUploadReachesTheRun: a file staged with upload_file and named
// in execute_code's files is in the run's workspace when it starts.
func TestStagedUploadReachesTheRun(t *testing.T) {
	cs, _ := connect(t, catInput)
	ctx := context.Background()
	up, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "upload_file", Arguments: map[string]any{"path": "input.csv", "content": "a,b\n1,2\n"}})
	if err != nil || up.IsError {
		t.Fatalf("upload_file: %v %s", err, tooltest.Text(up))
	}
	var staged struct {
		UploadID string `json:"upload_id"`
	}
	if tooltest.Decode(t, up, &staged); staged.UploadID == "" {
		t.Fatalf("upload_file gave no upload_id: %s", tooltest.Text(up))
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code",
		Arguments: map[string]any{"language": "bash", "code": "cat input.csv", "files": []string{staged.UploadID}}})
	if err != nil {
		t.Fatal(err)
	}
	var got execOut
	tooltest.Decode(t, res, &got)
	if got.Status != "success" || got.Stdout != "a,b\n1,2\n" {
		t.Errorf("status %s stdout %q: want the uploaded file's content; content %s", got.Status, got.Stdout, tooltest.Text(res))
	}
}

// TestUnknownUploadRunsNothing: an upload id that names no staged upload
// is refused with FILE_NOT_FOUND before anything starts.
func TestUnknownUploadRunsNothing(t *testing.T) {
	cs, b := connect(t, catInput)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "execute_code",
		Arguments: map[string]any{"language": "bash", "code": "cat input.csv", "files": []string{"up_nothing"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got execOut
	tooltest.Decode(t, res, &got)
	if !res.IsError || got.Code != "FILE_NOT_FOUND" {
		t.Errorf("isError %v code %q: want FILE_NOT_FOUND; content %s", res.IsError, got.Code, tooltest.Text(res))
	}
	if n := len(b.Specs()); n != 0 {
		t.Errorf("%d runs started, want none", n)
	}
}
