package packagetools_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/mcpserver/packagetools"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/mcpserver/tooltest"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/tenant"
)

// refusalServer serves install_package with an installer whose pip does
// not exist (a call that got as far as installing would fail, not pass)
// and a blocklist of "evilpkg"; global is the global package root ("":
// global installs off), sessions the sessions service (nil: none). Every
// call runs as principal ("" is the local operator).
func refusalServer(t *testing.T, global string, sessions packagetools.SessionPackages, principal string) *mcp.ClientSession {
	t.Helper()
	bl, err := packages.ParseBlocklist([]string{"evilpkg"})
	if err != nil {
		t.Fatal(err)
	}
	inst := packages.New(packages.Options{Python: "/nonexistent/python3", Env: []string{"PATH=/nonexistent"}, GlobalRoot: global, Blocklist: bl})
	srv := mcp.NewServer(&mcp.Implementation{Name: "packagetools-test", Version: "0"}, nil)
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if principal != "" {
				ctx = tenant.With(ctx, principal)
			}
			return next(ctx, method, req)
		}
	})
	packagetools.Register(tool.NewRegistrar(srv), packagetools.Deps{Packages: inst, SessionPackages: sessions})
	return tooltest.Connect(t, srv)
}

// TestInstallPackageRefuses: each refusal reaches the client with its code
// before any installer runs, and installs nothing anywhere.
func TestInstallPackageRefuses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		args      map[string]any
		global    bool
		sessions  bool
		principal string
		want      string
	}{
		{"language without installs", map[string]any{"package": "six", "language": "ruby"}, true, true, "", tool.CodeInvalidLanguage},
		{"malformed package", map[string]any{"package": "six; rm -rf /", "language": "python"}, true, true, "", tool.CodeInvalidParams},
		{"url instead of a name", map[string]any{"package": "https://example.com/x.whl", "language": "python"}, true, true, "", tool.CodeInvalidParams},
		{"package of the wrong type", map[string]any{"package": 1, "language": "python"}, true, true, "", tool.CodeInvalidParams},
		{"global install by a tenant", map[string]any{"package": "six", "language": "python"}, true, true, "bob", tool.CodeNotAllowed},
		{"global installs not configured", map[string]any{"package": "six", "language": "python"}, false, true, "", tool.CodeNotEnabled},
		{"session install without sessions", map[string]any{"package": "six", "language": "python", "session_id": "sess_known"}, true, false, "", tool.CodeNotEnabled},
		{"unknown session", map[string]any{"package": "six", "language": "node", "session_id": "sess_gone"}, true, true, "", tool.CodeSessionNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			global := ""
			if tc.global {
				global = filepath.Join(root, "global")
			}
			var sess packagetools.SessionPackages
			rec := &recordingSessions{root: filepath.Join(root, "sessions")}
			if tc.sessions {
				sess = rec
			}
			got := tooltest.FailureOf(tooltest.Call(t, refusalServer(t, global, sess, tc.principal), "install_package", tc.args))
			if !got.IsError || got.Code != tc.want || got.Message == "" {
				t.Errorf("got %+v, want an isError %s with a message", got, tc.want)
			}
			if len(rec.recs) != 0 {
				t.Errorf("installs recorded: %v", rec.recs)
			}
			assertNothingInstalled(t, root)
		})
	}
}

// TestBlockedPackageIsAResult: a blocklisted package is a normal result
// (success false, the reason in error), not a failed call, and nothing is
// installed.
func TestBlockedPackageIsAResult(t *testing.T) {
	root := t.TempDir()
	cs := refusalServer(t, filepath.Join(root, "global"), nil, "")
	res := tooltest.Call(t, cs, "install_package", map[string]any{"package": "evilpkg==1.0", "language": "python"})
	var out packagetools.InstallPackageOut
	tooltest.Decode(t, res, &out)
	got := []any{res.IsError, out.Success, out.Package, out.Language, strings.Contains(out.Error, "evilpkg")}
	if diff := cmp.Diff([]any{false, false, "evilpkg", "python", true}, got); diff != "" {
		t.Errorf("[isError success package language error-names-it] (-want +got)\n%s\n%s", diff, tooltest.Text(res))
	}
	assertNothingInstalled(t, root)
}

// assertNothingInstalled fails when any file exists below root.
func assertNothingInstalled(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("installed %s", p)
		}
		return nil
	})
}
