package e2e

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds cmd/codexec once per test process and returns its path.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "codexec-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "codexec")
		// The sandbox helper is built next to codexec, as the README's build
		// command does, so the namespace backend uses it.
		out, err := exec.Command("go", "build", "-o", dir+"/", "github.com/codexec/codexec/cmd/codexec",
			"github.com/codexec/codexec/cmd/codexec-sandbox").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// server is a running codexec binary with a connected client session.
type server struct {
	t       testing.TB
	Session *mcp.ClientSession
	Cmd     *exec.Cmd
	DataDir string
	Stderr  *syncBuffer
}

// syncBuffer collects the server's stderr log for failure messages.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start launches the server with a fresh data dir and extra environment
// ("K=V"). The default sandbox mode is the host's auto choice unless env
// sets CODEXEC_SANDBOX_MODE. The server is stopped at test cleanup.
func start(t testing.TB, env ...string) *server {
	t.Helper()
	return startIn(t, "", env...)
}

// startIn is start with the server's working directory set to dir ("" keeps
// the test's); seed 002 resolves relative cwd values against it.
func startIn(t testing.TB, dir string, env ...string) *server {
	t.Helper()
	return startWith(t, dir, nil, env...)
}

// startWith is startIn with client options (e.g. a progress handler).
// In rootless mode (CODEXEC_TEST_SANDBOX_MODE=rootless) the server runs as
// the test account (see startRootless).
func startWith(t testing.TB, dir string, opts *mcp.ClientOptions, env ...string) *server {
	t.Helper()
	return launch(t, rootlessMode(), dir, opts, env...)
}

// launch starts a stdio server; rootless runs it as the test account.
func launch(t testing.TB, rootless bool, dir string, opts *mcp.ClientOptions, env ...string) *server {
	t.Helper()
	return launchSession(t, rootless, dir, opts, nil, env...)
}

// launchSession is launch with the client session's options (the
// protocol revision it asks for; nil: the newest).
func launchSession(t testing.TB, rootless bool, dir string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, env ...string) *server {
	t.Helper()
	return launchBinary(t, binary(t), rootless, dir, opts, sopts, env...)
}

// launchBinary is launchSession with the codexec binary at bin (a build
// made another way, e.g. with other build tags).
func launchBinary(t testing.TB, bin string, rootless bool, dir string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, env ...string) *server {
	t.Helper()
	var acct *testAccount
	if rootless {
		acct = rootlessAccount(t) // skips before anything is made where it cannot be used
	}
	data := t.TempDir()
	cmd := exec.Command(bin, "serve")
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"CODEXEC_DATA_DIR=" + data, "LOG_LEVEL=debug", "CODEXEC_CPU_PROFILE=" + os.Getenv("CODEXEC_TEST_CPU_PROFILE"),
	}, env...)
	if mode := serverMode(); mode != "" && !hasKey(env, "CODEXEC_SANDBOX_MODE") {
		cmd.Env = append(cmd.Env, "CODEXEC_SANDBOX_MODE="+mode)
		if mode == "docker" && !hasKey(env, "CODEXEC_DOCKER_IMAGE") {
			denv, why := dockerTestEnv(t, "node")
			if why != "" {
				t.Skip(why)
			}
			cmd.Env = append(cmd.Env, denv...)
		}
	}
	if acct != nil {
		acct.reach(t, data) // the test's temporary directories, as a user's are to the server they start
		data = acct.asAccount(t, cmd, env)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, sopts)
	if err != nil {
		t.Fatalf("connect: %v\nserver log:\n%s", err, stderr.String())
	}
	s := &server{t: t, Session: cs, Cmd: cmd, DataDir: data, Stderr: stderr}
	t.Cleanup(func() {
		_ = cs.Close()
		if t.Failed() {
			t.Logf("server log:\n%s", tail(stderr.String(), 40000))
		}
	})
	return s
}

// modeDependentOnlyEnv, set by scripts/test.sh for its second end-to-end
// pass (the suite again with CODEXEC_TEST_SANDBOX_MODE), keeps only the
// tests whose outcome can depend on that mode.
const modeDependentOnlyEnv = "CODEXEC_TEST_MODE_DEPENDENT_ONLY"

// sameInEveryMode marks a test (or subtest) whose outcome cannot depend on
// CODEXEC_TEST_SANDBOX_MODE, why saying how: its servers pin their sandbox
// modes, or what it checks happens before or around any run (protocol,
// schemas, authentication, stores). The second pass skips it; the first
// pass runs it.
func sameInEveryMode(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(modeDependentOnlyEnv) != "" {
		t.Skipf("same in every sandbox mode (%s): the first end-to-end pass runs it", why)
	}
}

// pinsNamespaceMode marks a test whose servers pin namespace mode (or
// every mode sandboxModes lists): the subprocess pass skips it as
// sameInEveryMode does, the rootless pass runs it, since there the
// harness starts those servers as the test account and the pinned
// namespace mode is the rootless sandbox.
func pinsNamespaceMode(t testing.TB, why string) {
	t.Helper()
	if !rootlessMode() {
		sameInEveryMode(t, why)
	}
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, key+"=") {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// call invokes a tool and returns the raw result; protocol errors fail the test.
func (s *server) call(name string, args any) *mcp.CallToolResult {
	s.t.Helper()
	return s.callMeta(name, args, nil)
}

func (s *server) callMeta(name string, args any, meta mcp.Meta) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := s.Session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	if err != nil {
		s.t.Fatalf("%s: protocol error: %v", name, err)
	}
	return res
}

// callInto invokes a tool and decodes its structured content into out.
func (s *server) callInto(name string, args any, out any) *mcp.CallToolResult {
	s.t.Helper()
	res := s.call(name, args)
	decodeStructured(s.t, res, out)
	return res
}

func decodeStructured(t testing.TB, res *mcp.CallToolResult, out any) {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("decode structured content %s: %v", b, err)
	}
}

// text returns the concatenated text content of a result.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
