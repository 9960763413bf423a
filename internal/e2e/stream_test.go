package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressLog records the notifications/progress a client receives, per
// progress token, in arrival order.
type progressLog struct {
	mu   sync.Mutex
	msgs map[string][]progressMsg
	seen chan string // each token's notifications, unbuffered readers skip
}

type progressMsg struct {
	text     string
	progress float64
	at       time.Time
}

func newProgressLog() *progressLog {
	return &progressLog{msgs: map[string][]progressMsg{}, seen: make(chan string, 1024)}
}

func (p *progressLog) handle(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	tok := fmt.Sprint(req.Params.ProgressToken)
	p.mu.Lock()
	p.msgs[tok] = append(p.msgs[tok], progressMsg{req.Params.Message, req.Params.Progress, time.Now()})
	p.mu.Unlock()
	select {
	case p.seen <- tok:
	default:
	}
}

func (p *progressLog) of(tok string) []progressMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]progressMsg(nil), p.msgs[tok]...)
}

// text is every message of tok concatenated, waiting up to wait for it to
// equal want (notifications may still be in flight when the result arrives).
func (p *progressLog) text(tok, want string, wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		var b strings.Builder
		for _, m := range p.of(tok) {
			b.WriteString(m.text)
		}
		if b.String() == want || time.Now().After(deadline) {
			return b.String()
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// awaitFirst blocks until tok's first notification arrives.
func (p *progressLog) awaitFirst(t *testing.T, tok string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for len(p.of(tok)) == 0 {
		select {
		case <-p.seen:
		case <-deadline:
			t.Fatalf("no progress notification for %s", tok)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func startStreaming(t *testing.T, env ...string) (*server, *progressLog) {
	t.Helper()
	pl := newProgressLog()
	return startWith(t, "", &mcp.ClientOptions{ProgressNotificationHandler: pl.handle}, env...), pl
}

// callProgress calls a tool with a progress token.
func (s *server) callProgress(ctx context.Context, tool, token string, args map[string]any) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool, Arguments: args}
	params.SetProgressToken(token)
	return s.Session.CallTool(ctx, params)
}

// TestProgressStreamsOutput: with a progressToken, each tool's output of a
// program printing every 100 ms arrives as notifications/progress while it
// runs — in order, coalesced to at most ~10 per second — and the messages
// add up to exactly the result's output, which is unchanged.
func TestProgressStreamsOutput(t *testing.T) {
	s, pl := startStreaming(t, "ALLOWED_COMMANDS=echo,sleep,bash")
	sess := s.startSession("python")
	var ctxOut struct {
		ContextID string `json:"context_id"`
	}
	s.callInto("create_context", map[string]any{"name": "ticker", "language": "python"}, &ctxOut)
	pyTicks := pyTicksCode
	shTicks := "for i in 0 1 2 3 4 5 6 7 8 9; do echo tick $i; sleep 0.1; done"
	s.call("save_script", map[string]any{"name": "ticker", "language": "bash", "code": shTicks})
	want := ""
	for i := range 10 {
		want += fmt.Sprintf("tick %d\n", i)
	}
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"execute_code", map[string]any{"language": "python", "code": pyTicks}},
		{"execute_code", map[string]any{"language": "bash", "code": shTicks}},
		{"send_to_session", map[string]any{"session_id": sess.SessionID, "code": pyTicks}},
		{"run_code", map[string]any{"context_id": ctxOut.ContextID, "code": pyTicks}},
		{"run_script", map[string]any{"name": "ticker"}},
		{"execute_command", map[string]any{"command": shTicks}},
		{"execute_process", map[string]any{"file": "bash", "args": []string{"-c", shTicks}}},
	}
	for i, c := range cases {
		t.Run(c.tool, func(t *testing.T) {
			tok := fmt.Sprintf("tok-%d", i)
			begin := time.Now()
			res, err := s.callProgress(context.Background(), c.tool, tok, c.args)
			returned := time.Now()
			if err != nil || res.IsError {
				t.Fatalf("%v %v", err, res)
			}
			var out struct {
				Stdout string `json:"stdout"`
			}
			decodeStructured(t, res, &out)
			if out.Stdout != want {
				t.Fatalf("result stdout changed: %q", out.Stdout)
			}
			if got := pl.text(tok, want, 3*time.Second); got != want {
				t.Fatalf("streamed text %q, want %q", got, want)
			}
			checkStream(t, pl.of(tok), begin, returned)
		})
	}
	t.Run("no token, no notifications", func(t *testing.T) {
		s.exec(map[string]any{"language": "bash", "code": shTicks})
		pl.mu.Lock()
		defer pl.mu.Unlock()
		if len(pl.msgs) != len(cases) {
			t.Errorf("notifications for %d tokens, want %d", len(pl.msgs), len(cases))
		}
	})
}

// pyTicksCode prints ten lines, one every 100 ms: a second of streamed
// output.
const pyTicksCode = "import time\nfor i in range(10):\n    print(f'tick {i}', flush=True)\n    time.sleep(0.1)\n"

// callStreamed calls tool with args and progress token tok through cs and
// checks that the call's progress (collected by pl) streamed exactly its
// stdout; it returns the result.
func callStreamed(t *testing.T, ctx context.Context, cs *mcp.ClientSession, pl *progressLog, tool string, args map[string]any, tok string) execResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken(tok)
	begin := time.Now()
	res, err := cs.CallTool(ctx, p)
	returned := time.Now()
	if err != nil || res.IsError {
		t.Fatalf("%s with a progress token: %v %v", tool, err, res)
	}
	var out execResult
	decodeStructured(t, res, &out)
	if got := pl.text(tok, out.Stdout, 3*time.Second); got != out.Stdout || !strings.HasPrefix(got, "tick 0\n") {
		t.Errorf("streamed %q, result stdout %q", got, out.Stdout)
	}
	checkStream(t, pl.of(tok), begin, returned)
	return out
}

// checkStream: the messages were streamed (several, the first well before
// the result), progress increases, and the rate stays near 10 per second.
func checkStream(t *testing.T, msgs []progressMsg, begin, returned time.Time) {
	t.Helper()
	if len(msgs) < 3 {
		t.Errorf("only %d notifications for 1 s of output: not streamed", len(msgs))
	}
	if lead := returned.Sub(msgs[0].at); lead < 300*time.Millisecond {
		t.Errorf("first notification only %v before the result: not streamed", lead)
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i].progress <= msgs[i-1].progress {
			t.Errorf("progress not increasing: %v then %v", msgs[i-1].progress, msgs[i].progress)
		}
	}
	if limit := int(returned.Sub(begin)/(100*time.Millisecond)) + 2; len(msgs) > limit {
		t.Errorf("%d notifications in %v: more than 10 per second", len(msgs), returned.Sub(begin))
	}
}

// runProc is a process of a run found by its working directory below the
// server's data dir, with the cgroups it ran in that differ from the test's
// own (the run's cgroups, as /sys/fs/cgroup paths).
type runProc struct {
	pid     string
	cgroups []string
}

// procsOf finds the processes of this server's runs: their working directory
// lies below the server's private data dir. Nothing else is looked at.
func procsOf(s *server) []runProc {
	self := cgroupDirs("self")
	var out []runProc
	for _, p := range processesUnder(s.DataDir) {
		pid, _, _ := strings.Cut(p, ":")
		rp := runProc{pid: pid}
		for _, d := range cgroupDirs(pid) {
			if !slices.Contains(self, d) {
				rp.cgroups = append(rp.cgroups, d)
			}
		}
		out = append(out, rp)
	}
	return out
}

// cgroupDirs maps /proc/<pid>/cgroup to directories under /sys/fs/cgroup
// (v1 hierarchies and the v2 one, wherever it is mounted).
func cgroupDirs(pid string) []string {
	b, _ := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		root := filepath.Join("/sys/fs/cgroup", strings.TrimPrefix(parts[1], "name="))
		if parts[0] == "0" {
			root = "/sys/fs/cgroup"
			if _, err := os.Stat("/sys/fs/cgroup/unified/cgroup.procs"); err == nil {
				root = "/sys/fs/cgroup/unified"
			}
		}
		dirs = append(dirs, filepath.Join(root, parts[2]))
	}
	return dirs
}

// alive reports the recorded processes that still exist (zombies aside),
// and the run cgroups that still hold a process.
func alive(procs []runProc) []string {
	var left []string
	for _, p := range procs {
		if st, err := os.ReadFile(filepath.Join("/proc", p.pid, "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
			left = append(left, "pid "+p.pid)
		}
		for _, cg := range p.cgroups {
			if b, err := os.ReadFile(filepath.Join(cg, "cgroup.procs")); err == nil && strings.TrimSpace(string(b)) != "" {
				left = append(left, "cgroup "+cg+": "+strings.Join(strings.Fields(string(b)), ","))
			}
		}
	}
	return left
}

// TestCancelKillsOneShot: notifications/cancelled stops a busy loop at once:
// every process of the run (and its cgroup) is gone within 200 ms, and the
// execution log says cancelled.
func TestCancelKillsOneShot(t *testing.T) {
	s, pl := startStreaming(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := s.callProgress(ctx, "execute_code", "spin", map[string]any{"language": "python",
			"code": "print('spinning', flush=True)\nwhile True: pass  # cancelmark", "timeout_ms": 120000})
		errc <- err
	}()
	pl.awaitFirst(t, "spin")
	procs := procsOf(s)
	if len(procs) == 0 {
		t.Fatal("cannot see the run's processes")
	}
	begin := time.Now()
	cancel()
	for len(alive(procs)) > 0 && time.Since(begin) < 10*time.Second {
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(begin)
	if left := alive(procs); len(left) > 0 {
		t.Fatalf("still running 10 s after the cancel: %v", left)
	}
	t.Logf("run killed %v after the cancel (processes %v)", took, procs)
	if took > 200*time.Millisecond {
		t.Errorf("the run outlived the cancel by %v (> 200 ms)", took)
	}
	if err := <-errc; err == nil {
		t.Error("the cancelled call returned a result")
	}
	e := findLog(t, s, "cancelmark")
	if e["status"] != "cancelled" {
		t.Errorf("log entry status %v, want cancelled", e["status"])
	}
}

// findLog waits for the one cancelled execution whose code has word, and
// returns its full log entry.
func findLog(t *testing.T, s *server, word string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var out struct {
			Results []struct {
				ExecutionID string `json:"execution_id"`
			} `json:"results"`
		}
		s.callInto("search_execution_logs", map[string]any{"status": "cancelled", "query": word}, &out)
		if len(out.Results) == 1 {
			var e map[string]any
			s.callInto("get_execution_log", map[string]any{"execution_id": out.Results[0].ExecutionID}, &e)
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("search for cancelled %q: %d results", word, len(out.Results))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCancelInSessionKeepsState: cancelling a send interrupts the running
// code like a timeout does; the session and its variables survive, and the
// log entry says cancelled with the state preserved.
func TestCancelInSessionKeepsState(t *testing.T) {
	s, pl := startStreaming(t)
	sess := s.startSession("python")
	if r, _ := s.send(sess.SessionID, "x = 42", nil); r.Status != "success" {
		t.Fatalf("setup: %+v", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, _ = s.callProgress(ctx, "send_to_session", "sess-spin", map[string]any{"session_id": sess.SessionID,
			"code": "print('spinning', flush=True)\nwhile True: pass  # sessioncancelmark", "timeout_ms": 120000})
	}()
	pl.awaitFirst(t, "sess-spin")
	cancel()
	r, _ := s.send(sess.SessionID, "print(x)", nil)
	if r.Status != "success" || r.Stdout != "42\n" {
		t.Fatalf("after the cancel the session answered %+v", r)
	}
	e := findLog(t, s, "sessioncancelmark")
	msg, _ := e["error_message"].(string)
	if e["status"] != "cancelled" || !strings.Contains(msg, "state is preserved") {
		b, _ := json.Marshal(e)
		t.Errorf("log entry: %s", b)
	}
}

// TestClientGoneKillsRun: a client that goes away (its end of the server's
// stdin closes while a call runs) cancels its running calls: the run is
// killed at once and logged as cancelled, and the server exits without
// waiting for the run's timeout. (ClientSession.Close would first wait for
// the pending call, so the test drops the pipe itself.)
func TestClientGoneKillsRun(t *testing.T) {
	s, pl := startStreaming(t)
	go func() {
		_, _ = s.callProgress(context.Background(), "execute_code", "gone", map[string]any{"language": "bash",
			"code": "echo spinning; while :; do :; done # gonemark", "timeout_ms": 120000})
	}()
	pl.awaitFirst(t, "gone")
	procs := procsOf(s)
	if len(procs) == 0 {
		t.Fatal("cannot see the run's processes")
	}
	begin := time.Now()
	dropStdin(t, s.Cmd.Process.Pid)
	for len(alive(procs)) > 0 && time.Since(begin) < 10*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	if left := alive(procs); len(left) > 0 {
		t.Fatalf("still running 10 s after the client left: %v", left)
	}
	t.Logf("run killed %v after the client left", time.Since(begin))
	// The transport reaps the server; the test only watches it exit.
	server := []runProc{{pid: strconv.Itoa(s.Cmd.Process.Pid)}}
	for len(alive(server)) > 0 && time.Since(begin) < 30*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	if took := time.Since(begin); took > 8*time.Second {
		t.Errorf("server took %v to exit (waited for the run?)", took)
	}
	b, err := os.ReadFile(filepath.Join(s.DataDir, "logs", "executions-"+time.Now().UTC().Format("2006-01-02")+".jsonl"))
	if err != nil || !strings.Contains(string(b), `"status":"cancelled"`) || !strings.Contains(string(b), "gonemark") {
		t.Errorf("no cancelled log entry for the run: %v\n%s", err, b)
	}
}

// dropStdin closes this process's write end of the server's stdin pipe, as
// a client that dies would: /dev/null is dup'ed over the descriptor, so the
// number stays valid for the transport's own later Close.
func dropStdin(t *testing.T, serverPid int) {
	t.Helper()
	pipe, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/0", serverPid))
	if err != nil {
		t.Fatal(err)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	fds, _ := filepath.Glob("/proc/self/fd/*")
	n := 0
	for _, fd := range fds {
		if l, err := os.Readlink(fd); err == nil && l == pipe {
			num, _ := strconv.Atoi(filepath.Base(fd))
			if err := syscall.Dup2(int(null.Fd()), num); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("no descriptor of %s in the test process", pipe)
	}
}

// TestBusyAfterQueueWait: with CODEXEC_MAX_CONCURRENT=1 a second concurrent
// execution queues CODEXEC_QUEUE_WAIT_MS and then gets a busy tool error;
// once the first run ends the next call runs.
func TestBusyAfterQueueWait(t *testing.T) {
	// The queue wait must outlast a cancelled run's teardown on a loaded
	// machine: the last call queues behind it.
	s, pl := startStreaming(t, "CODEXEC_MAX_CONCURRENT=1", "CODEXEC_QUEUE_WAIT_MS=1500")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = s.callProgress(ctx, "execute_code", "hold", map[string]any{"language": "bash", "code": "echo up; sleep 60"})
	}()
	pl.awaitFirst(t, "hold")
	begin := time.Now()
	r, res := s.exec(map[string]any{"language": "bash", "code": "echo second"})
	if !res.IsError || !strings.Contains(text(res), "busy") || !strings.Contains(text(res), "CODEXEC_QUEUE_WAIT_MS") {
		t.Fatalf("second call: %+v %s", r, text(res))
	}
	if waited := time.Since(begin); waited < 1500*time.Millisecond {
		t.Errorf("busy after %v, before the 1500 ms queue wait", waited)
	}
	cancel()
	<-done
	if r, res := s.exec(map[string]any{"language": "bash", "code": "echo third"}); r.Stdout != "third\n" {
		t.Errorf("after the first run ended: %+v %s", r, text(res))
	}
}
