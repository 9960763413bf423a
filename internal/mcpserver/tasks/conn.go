package tasks

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport wraps t (one client, as stdio has) so its connections serve
// tasks: tasks/* requests are answered here, for the principal ctx names
// (tenant.With), and never reach the SDK, which would refuse them; a
// tools/call's `params.task` moves to _meta[MarkerKey]; the responses to
// initialize and tools/list get the capability and taskSupport. Every
// other message passes as it is, after a byte search of a tools/call's
// params.
func (w *Wire) Transport(ctx context.Context, t mcp.Transport) mcp.Transport {
	return transport{Transport: t, w: w, ctx: ctx}
}

type transport struct {
	mcp.Transport
	w   *Wire
	ctx context.Context
}

func (t transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(t.ctx)
	return &conn{Connection: c, w: t.w, ctx: cctx, cancel: cancel, rewrites: map[jsonrpc.ID]func(json.RawMessage) json.RawMessage{}}, nil
}

// conn is one connection serving tasks. Its answers to tasks/* and the
// SDK's writes share the underlying connection under writeMu.
type conn struct {
	mcp.Connection
	w      *Wire
	ctx    context.Context // the answers' context: ends when the connection closes
	cancel context.CancelFunc

	writeMu  sync.Mutex
	mu       sync.Mutex
	rewrites map[jsonrpc.ID]func(json.RawMessage) json.RawMessage // responses to rewrite, by request id
	version  string                                               // the protocol version initialize negotiated
}

// initialized rewrites initialize's result and notes the version it
// negotiated.
func (c *conn) initialized(result json.RawMessage) json.RawMessage {
	c.mu.Lock()
	c.version = negotiated(result)
	c.mu.Unlock()
	return initializeResult(result)
}

func (c *conn) negotiated() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Read returns the next message for the SDK, answering tasks/* on the way.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if IsMethod(req.Method) && req.IsCall() {
			// tasks/result blocks until the task ends: no answer holds up the reads.
			go c.answer(req)
			continue
		}
		c.prepare(req)
		return req, nil
	}
}

// prepare rewrites req's params or notes how to rewrite its response.
// Only a tools/list is decoded (for its revision); a tools/call's params
// are searched for "task" first.
func (c *conn) prepare(req *jsonrpc.Request) {
	var f func(json.RawMessage) json.RawMessage
	switch req.Method {
	case "tools/call":
		var task bool
		if req.Params, task = callParams(req.Params); task {
			f = c.watch // the answer is the handle of a task to notify the end of
		}
	case "initialize":
		f = c.initialized
	case "tools/list":
		version := c.negotiated()
		if ext, _ := extendedRaw(req.Params); ext {
			version = "" // a 2026-07-28 request on this connection
		}
		f = c.w.responseRewrite(req.Method, version)
	}
	if f != nil && req.IsCall() {
		c.mu.Lock()
		c.rewrites[req.ID] = f
		c.mu.Unlock()
	}
}

// watch passes a tools/call's answer on as it is and, when it is a
// 2025-11-25 task handle, sends notifications/tasks/status once the task
// has ended (the revision's optional status notification; a client polls
// or waits on tasks/result all the same).
func (c *conn) watch(result json.RawMessage) json.RawMessage {
	var created struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(result, &created) == nil && created.Task.TaskID != "" {
		go c.notifyEnd(created.Task.TaskID)
	}
	return result
}

// notifyEnd waits for task id's end and notifies its final status, unless
// the connection closes first.
func (c *conn) notifyEnd(id string) {
	for c.ctx.Err() == nil {
		t, err := c.w.svc.get(c.ctx, id, resultWait)
		if err != nil {
			return
		}
		if t.Status == StatusWorking {
			continue
		}
		params, err := json.Marshal(t.Legacy())
		if err == nil {
			_ = c.write(c.ctx, &jsonrpc.Request{Method: "notifications/tasks/status", Params: params})
		}
		return
	}
}

func (c *conn) answer(req *jsonrpc.Request) {
	res := c.w.svc.Answer(c.ctx, req)
	_ = c.write(c.ctx, res)
}

// Write sends msg, rewritten if it answers initialize or tools/list.
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		c.mu.Lock()
		f := c.rewrites[r.ID]
		delete(c.rewrites, r.ID)
		c.mu.Unlock()
		if f != nil {
			r.Result = f(r.Result)
		}
	}
	return c.write(ctx, msg)
}

func (c *conn) write(ctx context.Context, msg jsonrpc.Message) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	return c.Connection.Write(ctx, msg)
}

// Close ends the answers in flight and closes the connection.
func (c *conn) Close() error {
	c.cancel()
	return c.Connection.Close()
}
