package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/stdiowire"
)

// BenchmarkTaskCall compares one execute_code run (python, print(1)) called
// plainly with the same call made as a 2025-11-25 task: tools/call with
// params.task (the task handle, once the background run is recorded), then
// tasks/get every pollEvery until one sees the task done. Both go through
// the whole server (stdio wire, the tasks wire, middleware, the host's
// default sandbox mode) in one process over pipes, interleaved so that both
// rows see the same machine load. It reports the p50 of each, the ratio of
// task to plain, the p50 of the create alone, and how many tasks/get a task
// took. Polling without a pause would measure the polls' competition with
// the run for the CPU; a client that honours the suggested pollInterval
// (500 ms) waits longer: that wait, not the server, is what a task costs
// such a client.
//
//	go test ./internal/mcpserver -run '^$' -bench TaskCall -benchtime 200x
func BenchmarkTaskCall(b *testing.B) {
	c := rawAppClient(b)
	args := `{"language":"python","code":"print(1)"}`
	plain := func() int {
		c.mustResult(b, "tools/call", `{"name":"execute_code","arguments":`+args+`}`)
		return 0
	}
	var createT []time.Duration
	task := func() int {
		var created struct {
			Task struct{ TaskID string } `json:"task"`
		}
		t0 := time.Now()
		c.decode(b, c.mustResult(b, "tools/call", `{"name":"execute_code","arguments":`+args+`,"task":{"ttl":60000}}`), &created)
		createT = append(createT, time.Since(t0))
		for polls := 1; ; polls++ {
			time.Sleep(pollEvery)
			var got struct{ Status string }
			c.decode(b, c.mustResult(b, "tasks/get", `{"taskId":"`+created.Task.TaskID+`"}`), &got)
			if got.Status != "working" {
				if got.Status != "completed" {
					b.Fatalf("task %s ended %s", created.Task.TaskID, got.Status)
				}
				return polls
			}
		}
	}
	var plainT, taskT []time.Duration
	polls := 0
	for b.Loop() {
		t0 := time.Now()
		plain()
		plainT = append(plainT, time.Since(t0))
		t0 = time.Now()
		polls += task()
		taskT = append(taskT, time.Since(t0))
	}
	p, tk := p50(plainT), p50(taskT)
	b.Logf("plain p50 %7.1f µs  task p50 %7.1f µs  ratio %4.2f  create p50 %6.1f µs  tasks/get per task %4.1f",
		us(p), us(tk), float64(tk)/float64(p), us(p50(createT)), float64(polls)/float64(len(taskT)))
	b.ReportMetric(us(p), "plain-µs")
	b.ReportMetric(us(tk), "task-µs")
	b.ReportMetric(float64(tk)/float64(p), "task/plain")
}

// pollEvery is how often BenchmarkTaskCall's client polls: fast enough to
// see the end within a fraction of a plain call.
const pollEvery = 2 * time.Millisecond

// rawClient speaks JSON-RPC lines to a server over pipes, one request at a
// time: what a client of the requests no go-sdk client sends does.
type rawClient struct {
	w    io.Writer
	r    *bufio.Reader
	next int
}

// rawAppClient builds codexec in the host's default sandbox mode and
// initializes a raw 2025-11-25 client on its stdio wire.
func rawAppClient(b *testing.B) *rawClient {
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
	c := &rawClient{w: cw, r: bufio.NewReaderSize(cr, 4<<20)}
	c.mustResult(b, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"bench","version":"1"}}`)
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	return c
}

// mustResult sends method with params (JSON) and returns the result of its
// response, skipping notifications; an error response fails b.
func (c *rawClient) mustResult(b *testing.B, method, params string) json.RawMessage {
	c.next++
	if _, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.next, method, params); err != nil {
		b.Fatal(err)
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		var m struct {
			ID     *int
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal(line, &m); err != nil {
			b.Fatalf("%s: %v in %s", method, err, line)
		}
		if m.ID == nil || *m.ID != c.next {
			continue
		}
		if m.Error != nil {
			b.Fatalf("%s: %s", method, m.Error)
		}
		return m.Result
	}
}

func (c *rawClient) decode(b *testing.B, raw json.RawMessage, v any) {
	if err := json.Unmarshal(raw, v); err != nil {
		b.Fatalf("%v in %s", err, raw)
	}
}
