package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// runView is get_run's answer.
type runView struct {
	ExecutionID      string          `json:"execution_id"`
	Tool             string          `json:"tool"`
	Status           string          `json:"status"`
	StartedAt        time.Time       `json:"started_at"`
	EndedAt          *time.Time      `json:"ended_at"`
	Stdout           string          `json:"stdout"`
	Stderr           string          `json:"stderr"`
	NextStdoutOffset int64           `json:"next_stdout_offset"`
	NextStderrOffset int64           `json:"next_stderr_offset"`
	More             bool            `json:"more"`
	Dropped          int64           `json:"dropped"`
	Result           json.RawMessage `json:"result"`
	ErrorMessage     string          `json:"error_message"`
}

// callTool calls a tool over cs; protocol errors fail the test.
func callTool(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// startBackground calls tool with args and background: true and returns
// the execution id of the run it started (status running).
func startBackground(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	args["background"] = true
	res := callTool(t, cs, tool, args)
	var out struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status"`
	}
	decodeStructured(t, res, &out)
	if res.IsError || out.Status != "running" || !strings.HasPrefix(out.ExecutionID, "exec_") {
		t.Fatalf("%s background: %s", tool, text(res))
	}
	return out.ExecutionID
}

// getRun reads run id from the offsets, waiting up to waitMs.
func getRun(t testing.TB, cs *mcp.ClientSession, id string, outOff, errOff int64, waitMs int) runView {
	t.Helper()
	res := callTool(t, cs, "get_run", map[string]any{"execution_id": id, "stdout_offset": outOff, "stderr_offset": errOff, "wait_ms": waitMs})
	if res.IsError {
		t.Fatalf("get_run %s: %s", id, text(res))
	}
	var v runView
	decodeStructured(t, res, &v)
	return v
}

// reader follows one run's output by offsets, as an agent does.
type reader struct {
	id             string
	outOff, errOff int64
	stdout, stderr strings.Builder
}

// step reads what is new (waiting up to waitMs for it) and returns the view.
func (r *reader) step(t testing.TB, cs *mcp.ClientSession, waitMs int) runView {
	t.Helper()
	v := getRun(t, cs, r.id, r.outOff, r.errOff, waitMs)
	r.stdout.WriteString(v.Stdout)
	r.stderr.WriteString(v.Stderr)
	r.outOff, r.errOff = v.NextStdoutOffset, v.NextStderrOffset
	return v
}

// untilEnd reads until the run ended and everything is read.
func (r *reader) untilEnd(t testing.TB, cs *mcp.ClientSession, limit time.Duration) runView {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		v := r.step(t, cs, 5000)
		if v.Status != "running" && !v.More {
			return v
		}
	}
	t.Fatalf("run %s still running after %v", r.id, limit)
	return runView{}
}

// connectHTTP opens an MCP session over Streamable HTTP with token and
// client options (progress handler).
func connectHTTP(t testing.TB, s *httpServer, token string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectHTTPAt(t, s, token, "", opts)
}

// connectHTTPAt is connectHTTP at protocol revision version ("" = the
// client's newest, the stateless protocol; legacyVersion opens an MCP
// session).
func connectHTTPAt(t testing.TB, s *httpServer, token, version string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "codexec-e2e-bg", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.URL + "/mcp", HTTPClient: httpClient(token), MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// linesCode is python that prints "line i" for i < n, one every interval
// seconds, flushing each.
func linesCode(n int, interval float64) string {
	return fmt.Sprintf("import time, sys\nfor i in range(%d):\n    print('line', i, flush=True)\n    time.sleep(%g)\n", n, interval)
}

func wantLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// TestBackgroundRunOutlivesClient is the long proof: a background run of
// about five minutes (a few seconds with -short) printing a line a second,
// started over Streamable HTTP by a client that then disconnects; new MCP
// sessions read its output by offsets, with no gap and no line twice,
// while another background run is cancelled. The first client, while
// connected, gets the run's output as progress notifications. Its five
// minutes overlap the rest of the package: go test resumes parallel tests
// only after every sequential one has ended, so the run is started and read
// from a goroutine before t.Parallel, in the sequential phase, and awaited
// after it.
func TestBackgroundRunOutlivesClient(t *testing.T) {
	sameInEveryMode(t, "the offsets and sessions of a background run; the other background tests check its sandbox side")
	n := 300
	if testing.Short() {
		n = 6
	}
	s := startHTTP(t, "")
	progress := newProgressLog()
	// The first client is in an MCP session: a background run's progress
	// after its start call returned reaches a client only over a session's
	// event stream (a stateless request's stream ends with its answer). The
	// second one, which reads the run, is stateless.
	first := connectHTTPAt(t, s, "", legacyVersion, &mcp.ClientOptions{ProgressNotificationHandler: progress.handle})
	streamed := func() string {
		var b strings.Builder
		for _, m := range progress.of("bg-1") {
			b.WriteString(m.text)
		}
		return b.String()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := first.CallTool(ctx, &mcp.CallToolParams{Name: "execute_code", Meta: mcp.Meta{"progressToken": "bg-1"},
		Arguments: map[string]any{"language": "python", "code": linesCode(n, 1), "background": true, "timeout_ms": (n + 60) * 1000}})
	if err != nil || res.IsError {
		t.Fatalf("start: %v %s", err, text(res))
	}
	var started struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status"`
	}
	decodeStructured(t, res, &started)
	if started.Status != "running" {
		t.Fatalf("started: %s", text(res))
	}
	victim := startBackground(t, first, "execute_code", map[string]any{"language": "bash", "code": "echo started; sleep 600"})
	r := &reader{id: started.ExecutionID}
	r.step(t, first, 3000)
	// The first client stays connected while two lines come, then goes.
	waitFor(t, 20*time.Second, "progress of two lines", func() bool { return strings.Contains(streamed(), "line 1\n") })
	_ = first.Close()

	var last runView
	read := make(chan struct{})
	finished := false // false: the reading stopped at a fatal failure
	go func() {
		defer close(read)
		second := connectHTTP(t, s, "", nil)
		r.step(t, second, 3000)
		v := getRun(t, second, victim, 0, 0, 5000)
		if v.Status != "running" || v.Stdout != "started\n" {
			t.Errorf("victim before cancel: %+v", v)
			return
		}
		cres := callTool(t, second, "cancel_run", map[string]any{"execution_id": victim})
		var cancelled struct {
			Status string `json:"status"`
			Result struct {
				Status       string `json:"status"`
				ErrorMessage string `json:"error_message"`
			} `json:"result"`
		}
		decodeStructured(t, cres, &cancelled)
		if cancelled.Status != "cancelled" || cancelled.Result.Status != "cancelled" || !strings.Contains(cancelled.Result.ErrorMessage, "cancel_run") {
			t.Errorf("cancel_run: %s", text(cres))
		}
		_ = second.Close()

		// Every so often a new session goes on reading from the offsets kept.
		deadline := time.Now().Add(time.Duration(n+90) * time.Second)
		for time.Now().Before(deadline) {
			cs := connectHTTP(t, s, "", nil)
			for range 5 {
				if last = r.step(t, cs, 10000); last.Status != "running" && !last.More {
					break
				}
			}
			_ = cs.Close()
			if last.Status != "running" && !last.More {
				break
			}
		}
		finished = true
	}()
	t.Parallel()
	<-read
	if !finished {
		t.FailNow()
	}
	if got, want := r.stdout.String(), wantLines(n); got != want {
		t.Errorf("output read by offsets across sessions (%d bytes) differs from what was printed (%d bytes):\n%s", len(got), len(want), firstDiff(got, want))
	}
	var result struct {
		Status string `json:"status"`
		Stdout string `json:"stdout"`
	}
	if err := json.Unmarshal(last.Result, &result); err != nil || last.Status != "success" || result.Status != "success" {
		t.Fatalf("final view: %+v (%v)", last, err)
	}
	if !strings.Contains(streamed(), "line 0\nline 1\n") {
		t.Errorf("progress notifications of the first client: %q", streamed())
	}
}

// firstDiff shows where two texts part.
func firstDiff(got, want string) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	lo := max(0, i-40)
	return fmt.Sprintf("at byte %d: got %q, want %q", i, got[lo:min(len(got), i+40)], want[lo:min(len(want), i+40)])
}
