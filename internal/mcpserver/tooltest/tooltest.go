// Package tooltest is what the MCP layer's tests share: an engine on the
// fake sandbox backend (nothing is executed, no interpreter is needed), an
// MCP client connected to a server through the SDK's in-memory transports,
// and the decoding of a tool result's structured content and error object.
// With it a toolset's test drives the whole adapter path (argument
// decoding, the handler, the result's rendering and schema check) in
// milliseconds on any host. It is for tests only.
package tooltest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// Languages are the interpreters the fake engine claims to have. The paths
// are never executed: the fake backend only records them.
func Languages() *runtime.Set {
	return runtime.Fixed(map[string]string{runtime.Python: "/usr/bin/python3", runtime.Node: "/usr/bin/node", runtime.Bash: "/bin/bash"})
}

// EngineOptions are small, fast engine options over a fresh sandbox
// directory of t: a 5 s default timeout, one minute at most, a 50 ms kill
// grace and 1,000 characters of output.
func EngineOptions(t testing.TB) engine.Options {
	return engine.Options{
		SandboxDir: t.TempDir(), DefaultTimeout: 5 * time.Second, MaxTimeout: time.Minute,
		KillGrace: 50 * time.Millisecond, Output: output.Limits{Max: 1000, Head: 400, Tail: 400},
		BaseEnv: []string{"PATH=/usr/bin:/bin"},
	}
}

// Engine builds an engine with opts over backend b (see Languages) and
// closes it when the test ends.
func Engine(t testing.TB, b *sandboxfake.Backend, opts engine.Options) *engine.Engine {
	t.Helper()
	return EngineWith(t, engine.Deps{Backend: b, Languages: Languages()}, opts)
}

// EngineWith builds an engine with opts over deps (an execution log, a
// guard, …) and closes it when the test ends.
func EngineWith(t testing.TB, deps engine.Deps, opts engine.Options) *engine.Engine {
	t.Helper()
	e, err := engine.New(opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// FakeEngine is Engine over a new fake backend answering with script, with
// EngineOptions; isolated is what the backend reports. It returns the
// backend too, whose Specs say what was started.
func FakeEngine(t testing.TB, script sandboxfake.Script, isolated bool) (*engine.Engine, *sandboxfake.Backend) {
	t.Helper()
	b := sandboxfake.New(script, isolated)
	return Engine(t, b, EngineOptions(t)), b
}

// Connect connects a client to srv over in-memory transports; both ends
// close when the test ends.
func Connect(t testing.TB, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return ConnectWith(t, srv, nil)
}

// ConnectWith is Connect with client options (notification handlers).
func ConnectWith(t testing.TB, srv *mcp.Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "0"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Call calls tool name with args; a protocol error (not a tool error)
// fails the test.
func Call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// Decode decodes res's structured content into dst; content that does not
// decode fails the test.
func Decode(t testing.TB, res *mcp.CallToolResult, dst any) {
	t.Helper()
	if err := Remarshal(res.StructuredContent, dst); err != nil {
		t.Fatalf("structured content: %v; content %s", err, Text(res))
	}
}

// Remarshal decodes v (a decoded JSON value) into dst.
func Remarshal(v any, dst any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

// Text is res's text content, joined: for failure messages.
func Text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// Failure is a tool error as a client reads it: the code and message of
// the error object in the text content, and whether isError was set.
type Failure struct {
	IsError bool
	Code    string
	Message string
}

// FailureOf reads res as a tool error. A result that is not one has
// IsError false and whatever code its text carries (none, usually).
func FailureOf(res *mcp.CallToolResult) Failure {
	var obj struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
	_ = json.Unmarshal([]byte(Text(res)), &obj)
	return Failure{IsError: res.IsError, Code: obj.Code, Message: obj.Error}
}

// Program is the source a run was started with, as a script sees it in
// its spec: the code of an interpreter's -c argument, or else the files of
// the program directory its arguments name (sandbox.ProgramPath), joined.
// Scripts use it to answer by the code a call sent; it is "" for a run
// with neither.
func Program(spec sandbox.Spec) string {
	if i := slices.Index(spec.Argv, "-c"); i >= 0 && i+1 < len(spec.Argv) {
		return spec.Argv[i+1]
	}
	var b strings.Builder
	for _, arg := range spec.Argv {
		rel, ok := strings.CutPrefix(arg, sandbox.ProgramPath+"/")
		if !ok || spec.ProgramDir == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(spec.ProgramDir, filepath.FromSlash(rel)))
		if err == nil {
			b.Write(data)
		}
	}
	return b.String()
}
