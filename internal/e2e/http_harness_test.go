package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServer is a codexec binary serving Streamable HTTP on loopback.
type httpServer struct {
	t       testing.TB
	URL     string // base URL, no trailing slash
	Cmd     *exec.Cmd
	DataDir string
	Stderr  *syncBuffer
	exited  chan error
}

var listeningRE = regexp.MustCompile(`msg="http listening" addr=(\S+)`)

// startHTTP launches `codexec serve --http addr` (addr "" = 127.0.0.1:0)
// with a fresh data dir and extra environment, and waits until it listens.
// It is killed at cleanup if still running.
func startHTTP(t testing.TB, addr string, env ...string) *httpServer {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var acct *testAccount
	if rootlessMode() {
		acct = rootlessAccount(t)
	}
	data := t.TempDir()
	cmd := exec.Command(binary(t), "serve", "--http", addr)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8",
		"CODEXEC_DATA_DIR=" + data, "LOG_LEVEL=debug",
	}, env...)
	if mode := serverMode(); mode != "" && !hasKey(env, "CODEXEC_SANDBOX_MODE") {
		cmd.Env = append(cmd.Env, "CODEXEC_SANDBOX_MODE="+mode)
		if mode == "docker" && !hasKey(env, "CODEXEC_DOCKER_IMAGE") {
			denv, why := dockerTestEnv(t, "node") // the engine and image, as launch gives a stdio server
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
	s := &httpServer{t: t, Cmd: cmd, DataDir: data, Stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = s.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Stop it gracefully: on the way out the server unmounts its bounded
		// disks (below the data dir), which a SIGKILL would leave mounted.
		if cmd.Process.Signal(syscall.SIGTERM) == nil {
			select {
			case <-s.exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
		if t.Failed() {
			t.Logf("server log:\n%s", tail(s.Stderr.String(), 6000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if m := listeningRE.FindStringSubmatch(s.Stderr.String()); m != nil {
			s.URL = "http://" + m[1]
			if hasKey(env, "CODEXEC_TLS_CERT") {
				s.URL = "https://" + m[1]
			}
			return s
		}
		select {
		case err := <-s.exited:
			t.Fatalf("server exited before listening: %v\n%s", err, s.Stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("server did not listen within 60s\n%s", s.Stderr.String())
	return nil
}

// freeAddr returns a loopback address with a port that was free a moment
// ago (for tests whose server must know its own URL before it starts).
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// httpClient returns a client sending token ("" = none).
func httpClient(token string) *http.Client {
	if token == "" {
		return &http.Client{}
	}
	return &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
}

// connect opens an MCP client over Streamable HTTP with token at the SDK
// client's newest protocol revision: the stateless protocol, no session.
func (s *httpServer) connect(token string) (*mcp.ClientSession, error) {
	return s.connectAt(token, "")
}

// legacyVersion is the newest protocol revision with sessions (initialize,
// Mcp-Session-Id): the one a client that predates the stateless protocol
// speaks.
const legacyVersion = "2025-11-25"

// connectAt is connect at protocol revision version ("" = the client's
// newest); at legacyVersion it opens a stateful MCP session.
func (s *httpServer) connectAt(token, version string) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-http", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
}

// mustConnect is connect that fails the test on error; the client is
// closed at cleanup.
func (s *httpServer) mustConnect(token string) *mcp.ClientSession {
	s.t.Helper()
	return s.mustConnectAt(token, "")
}

// mustConnectAt is connectAt that fails the test on error; the client is
// closed at cleanup.
func (s *httpServer) mustConnectAt(token, version string) *mcp.ClientSession {
	s.t.Helper()
	cs, err := s.connectAt(token, version)
	if err != nil {
		s.t.Fatalf("connect: %v", err)
	}
	s.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// get fetches path and returns status, body and headers.
func (s *httpServer) get(path string) (int, string, http.Header) {
	s.t.Helper()
	return do(s.t, "GET", s.URL+path, "", nil)
}

func do(t testing.TB, method, url, body string, hdr map[string]string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), resp.Header
}

// metric returns the value of the exposition line starting with series
// (name plus labels, exactly as exposed), or -1 when absent.
func (s *httpServer) metric(series string) float64 {
	s.t.Helper()
	_, body, _ := s.get("/metrics")
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return -1
}

// terminate sends SIGTERM and waits up to d for the process to exit.
func (s *httpServer) terminate(d time.Duration) error {
	s.t.Helper()
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		return err
	case <-time.After(d):
		s.t.Fatalf("server still running %v after SIGTERM", d)
		return nil
	}
}

// initBody is a raw initialize request, for probing the endpoint by hand.
const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// mcpHeaders are the headers a Streamable HTTP POST needs.
func mcpHeaders(extra map[string]string) map[string]string {
	h := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	for k, v := range extra {
		h[k] = v
	}
	return h
}
