package packagetools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/mcpserver/packagetools"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/packages/packagestest"
)

// recordingSessions is a minimal sessions service: one known session with a
// package directory, recording what install_package reports.
type recordingSessions struct {
	root string
	mu   sync.Mutex
	recs []string
}

func (r *recordingSessions) PackageTarget(_ context.Context, sessionID, lang string) (string, error) {
	if sessionID != "sess_known" {
		return "", fmt.Errorf("session %s not found", sessionID)
	}
	return packages.Dir(filepath.Join(r.root, sessionID), lang), nil
}

func (r *recordingSessions) RecordPackage(_ context.Context, sessionID, lang, name, version string, success bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, fmt.Sprintf("%s %s %s %s %v", sessionID, lang, name, version, success))
	return nil
}

func TestInstallPackageIntoSession(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skip("host python3 without pip")
	}
	ix, err := packagestest.NewIndex(packagestest.Dist{Name: "codexec-demo", Version: "1.0.0", Files: map[string]string{"codexec_demo/__init__.py": "VALUE = 1\n"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	root := t.TempDir()
	sess := &recordingSessions{root: filepath.Join(root, "sessions")}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + root}
	inst := packages.New(packages.Options{Python: py, Env: env, PipIndexURL: ix.URL(), Timeout: time.Minute, GlobalRoot: filepath.Join(root, "global")})
	srv, err := mcpserver.New(mcpserver.Deps{Config: config.Config{Toolsets: []string{"packages"}}, Packages: inst, SessionPackages: sess})
	if err != nil {
		t.Fatal(err)
	}
	cs := tooltest.Connect(t, srv.MCP())
	call := func(args map[string]any) *mcp.CallToolResult {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "install_package", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := call(map[string]any{"session_id": "sess_known", "package": "codexec-demo", "language": "python"})
	var out packagetools.InstallPackageOut
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	if res.IsError || !out.Success || out.Version != "1.0.0" || out.SessionID != "sess_known" {
		t.Fatalf("%+v %v", out, res.Content)
	}
	if _, err := os.Stat(filepath.Join(root, "sessions", "sess_known", "python", "codexec_demo", "__init__.py")); err != nil {
		t.Errorf("not installed into the session's directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "global", "python", "codexec_demo")); !os.IsNotExist(err) {
		t.Errorf("session install leaked into the global directory: %v", err)
	}
	res = call(map[string]any{"session_id": "sess_known", "package": "codexec-missing", "language": "python"})
	if res.IsError {
		t.Fatalf("failed install should be a result: %v", res.Content)
	}
	res = call(map[string]any{"session_id": "sess_gone", "package": "codexec-demo", "language": "python"})
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "SESSION_NOT_FOUND") {
		t.Errorf("unknown session: %v", res.Content)
	}
	want := []string{"sess_known python codexec-demo 1.0.0 true", "sess_known python codexec-missing  false"}
	if diff := cmp.Diff(want, sess.recs); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
}

// TestInstallPackageStreamsProgress: with a progressToken the installer's
// output arrives as notifications/progress, adding up to install_output.
func TestInstallPackageStreamsProgress(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-m", "pip", "--version").Run(); err != nil {
		t.Skip("host python3 without pip")
	}
	ix, err := packagestest.NewIndex(packagestest.Dist{Name: "codexec-demo", Version: "1.0.0", Files: map[string]string{"codexec_demo/__init__.py": "VALUE = 1\n"}})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	root := t.TempDir()
	inst := packages.New(packages.Options{Python: py, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + root}, PipIndexURL: ix.URL(),
		Timeout: time.Minute, GlobalRoot: filepath.Join(root, "global")})
	srv, err := mcpserver.New(mcpserver.Deps{Config: config.Config{Toolsets: []string{"packages"}}, Packages: inst})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var streamed strings.Builder
	cs := tooltest.ConnectWith(t, srv.MCP(), &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if r.Params.ProgressToken == "inst" {
			streamed.WriteString(r.Params.Message)
		}
	}})
	params := &mcp.CallToolParams{Name: "install_package", Arguments: map[string]any{"package": "codexec-demo", "language": "python"}}
	params.SetProgressToken("inst")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	var out packagetools.InstallPackageOut
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &out)
	if !out.Success || out.InstallOutput == "" {
		t.Fatalf("%+v", out)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		mu.Lock()
		got := streamed.String()
		mu.Unlock()
		if got == out.InstallOutput {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("streamed %q, install_output %q", got, out.InstallOutput)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
