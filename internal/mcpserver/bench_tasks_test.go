package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/stdiowire"
)

// BenchmarkTaskCall compares one execute_code run (python, print(1)) called
// three ways through the whole server (stdio wire, the tasks wire,
// middleware, the host's default sandbox mode), in one process over pipes,
// interleaved so that every row sees the same machine load:
//
//	plain       the call, answered with the run's result
//	background  the call with background: true, then get_run every
//	            pollEvery until the run ended (the run path a task takes,
//	            without the tasks layer)
//	task        the call as a 2025-11-25 task (params.task: the handle once
//	            the run is recorded), then tasks/get every pollEvery until
//	            one sees it done
//
// It reports each row's p50, the ratios task/plain and task/background
// (the tasks layer's own share), the p50 of the task's create alone and
// the polls a task took. A client that honours the suggested pollInterval
// (500 ms) waits longer between polls: that wait, not the server, is what
// a task costs such a client.
//
//	go test ./internal/mcpserver -run '^$' -bench TaskCall -benchtime 100x
func BenchmarkTaskCall(b *testing.B) {
	c := rawAppClient(b)
	args := `{"language":"python","code":"print(1)"}`
	var createT []time.Duration
	rows := []struct {
		name string
		call func() int
	}{
		{"plain", func() int { c.mustResult(b, "tools/call", `{"name":"execute_code","arguments":`+args+`}`); return 0 }},
		{"background", func() int {
			var started struct {
				StructuredContent struct {
					ExecutionID string `json:"execution_id"`
				} `json:"structuredContent"`
			}
			c.decode(b, c.mustResult(b, "tools/call", `{"name":"execute_code","arguments":{"language":"python","code":"print(1)","background":true}}`), &started)
			return pollUntil(b, c, "tools/call", `{"name":"get_run","arguments":{"execution_id":"`+started.StructuredContent.ExecutionID+`"}}`, "success")
		}},
		{"task", func() int {
			var created struct {
				Task struct{ TaskID string } `json:"task"`
			}
			t0 := time.Now()
			c.decode(b, c.mustResult(b, "tools/call", `{"name":"execute_code","arguments":`+args+`,"task":{"ttl":60000}}`), &created)
			createT = append(createT, time.Since(t0))
			return pollUntil(b, c, "tasks/get", `{"taskId":"`+created.Task.TaskID+`"}`, "completed")
		}},
	}
	times := make([][]time.Duration, len(rows))
	polls := make([]int, len(rows))
	for b.Loop() {
		for i, r := range rows {
			t0 := time.Now()
			polls[i] += r.call()
			times[i] = append(times[i], time.Since(t0))
		}
	}
	for i, r := range rows {
		b.Logf("%-10s p50 %8.1f µs  polls %4.1f", r.name, us(p50(times[i])), float64(polls[i])/float64(len(times[i])))
		b.ReportMetric(us(p50(times[i])), r.name+"-µs")
	}
	plain, bg, task := p50(times[0]), p50(times[1]), p50(times[2])
	b.Logf("task/plain %4.2f  task/background %4.2f  create p50 %6.1f µs",
		float64(task)/float64(plain), float64(task)/float64(bg), us(p50(createT)))
	b.ReportMetric(float64(task)/float64(plain), "task/plain")
	b.ReportMetric(float64(task)/float64(bg), "task/background")
}

// pollUntil sends method with params every pollEvery until the status it
// answers (a task's, or get_run's in its structured content) is not
// running, and returns how many it sent; an end other than want fails b.
func pollUntil(b testing.TB, c *rawClient, method, params, want string) int {
	for polls := 1; ; polls++ {
		time.Sleep(pollEvery)
		var got struct {
			Status            string
			StructuredContent struct{ Status string } `json:"structuredContent"`
		}
		c.decode(b, c.mustResult(b, method, params), &got)
		status := got.Status
		if status == "" {
			status = got.StructuredContent.Status
		}
		if status == "working" || status == "running" {
			continue
		}
		if status != want {
			b.Fatalf("%s %s ended %s, want %s", method, params, status, want)
		}
		return polls
	}
}

// pollEvery is how often BenchmarkTaskCall's client polls: often enough to
// see the end soon after it, seldom enough not to compete with the run for
// the CPU.
const pollEvery = 10 * time.Millisecond

// rawClient speaks JSON-RPC lines to a server over pipes: what a client of
// the requests no go-sdk client sends does. It is safe for concurrent
// requests; one goroutine reads the answers and hands each to its waiter.
type rawClient struct {
	w       io.Writer
	mu      sync.Mutex
	next    int
	waiting map[int]chan rawAnswer
}

// rawAnswer is one response: its result or its error.
type rawAnswer struct {
	Result json.RawMessage
	Error  json.RawMessage
}

// rawAppClient builds codexec in the host's default sandbox mode and
// initializes a raw 2025-11-25 client on its stdio wire.
func rawAppClient(b testing.TB) *rawClient {
	dir := b.TempDir()
	a, err := app.Build(context.Background(), config.Defaults(dir), app.HostEnv{Home: dir, Path: os.Getenv("PATH"), Cwd: dir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { a.Close() })
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	wire := stdiowire.New(sr, sw, stdiowire.Options{MaxLineBytes: 32 << 20})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = a.Server.Run(ctx, wire.Transport()) }()
	b.Cleanup(func() { cancel(); _ = cw.Close(); _ = sw.Close() })
	c := &rawClient{w: cw, waiting: map[int]chan rawAnswer{}}
	go c.read(bufio.NewReaderSize(cr, 4<<20))
	c.mustResult(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"bench","version":"1"}}`)
	c.mu.Lock()
	_, err = io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	c.mu.Unlock()
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// read hands each response to the request waiting for it; notifications
// are dropped.
func (c *rawClient) read(r *bufio.Reader) {
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID *int
			rawAnswer
		}
		if json.Unmarshal(line, &m) != nil || m.ID == nil {
			continue
		}
		c.mu.Lock()
		ch := c.waiting[*m.ID]
		delete(c.waiting, *m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m.rawAnswer
		}
	}
}

// mustResult is result for the test's own goroutine: an error fails b.
func (c *rawClient) mustResult(b testing.TB, method, params string) json.RawMessage {
	b.Helper()
	res, err := c.result(method, params)
	if err != nil {
		b.Fatal(err)
	}
	return res
}

// result sends method with params (JSON) and returns the result of its
// response: an error response, or none within a minute, is an error.
func (c *rawClient) result(method, params string) (json.RawMessage, error) {
	ch := make(chan rawAnswer, 1)
	c.mu.Lock()
	c.next++
	id := c.next
	c.waiting[id] = ch
	_, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params)
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case a := <-ch:
		if a.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, a.Error)
		}
		return a.Result, nil
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("%s: no answer within a minute", method)
	}
}

func (c *rawClient) decode(b testing.TB, raw json.RawMessage, v any) {
	b.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		b.Fatalf("%v in %s", err, raw)
	}
}
