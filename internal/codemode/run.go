package codemode

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/errcode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
)

// MaxCodeBytes is the largest code a code-mode request may submit.
const MaxCodeBytes = 100 << 10

// Request is one code-mode execution: code run as an async function body
// with Context injected and the Tools of upstream MCP servers bound as
// objects whose calls cross the sandbox boundary over the channel.
type Request struct {
	// Language is runtime.TypeScript (also for JavaScript) or
	// runtime.Python; empty means TypeScript.
	Language string
	Code     string
	Intent   string
	Context  map[string]any
	// Stdin must be nil: the channel uses the program's stdin.
	Stdin *string
	// Timeout zero means the engine's default.
	Timeout    time.Duration
	WorkingDir string
	Call       execlog.CallContext
	Observe    output.Observer
	// Tools are the injected upstream tools; Caller calls them (required
	// when Tools is not empty). Bridge limits the calls.
	Tools  []Tool
	Caller Caller
	Bridge BridgeOptions
	// MemoryBytes, if positive, replaces the engine's memory limit.
	MemoryBytes int64
	// Prepare, if set, places files in the workspace first (see
	// engine.Request.Prepare).
	Prepare func(ws *files.Root) error
	// Network is the run's resolved network policy (engine.Request.Network).
	Network egress.Policy
}

// Execute runs a code-mode request on eng's run path. Like
// engine.Execute, invalid requests return an error; code that fails is a
// Result whose CodeError says how.
func Execute(ctx context.Context, eng *engine.Engine, req Request) (engine.Result, error) {
	if err := validate(&req); err != nil {
		return engine.Result{}, err
	}
	wo := WrapOptions{Tools: req.Tools, Mark: frameMark()}
	wrap := Wrap
	if req.Language == runtime.Python {
		wrap = WrapPython
	}
	src, err := wrap(req.Code, req.Context, wo)
	if err != nil {
		return engine.Result{}, err
	}
	ch, err := newRunChannel(ctx, req, wo.Mark)
	if err != nil {
		return engine.Result{}, err
	}
	ch.src = src
	return eng.Execute(ctx, engine.Request{Language: req.Language, Code: req.Code, Program: src, Timeout: req.Timeout,
		WorkingDir: req.WorkingDir, Tool: "execute_code", Context: req.Call, Observe: req.Observe, Intent: req.Intent,
		MemoryBytes: req.MemoryBytes, Prepare: req.Prepare, Channel: ch, Network: req.Network})
}

func validate(req *Request) error {
	switch {
	case strings.TrimSpace(req.Code) == "":
		return errcode.New(errcode.InvalidParams, "code is empty")
	case len(req.Code) > MaxCodeBytes:
		return errcode.New(errcode.InvalidParams, "code is %d bytes, over the %d KB limit of code mode", len(req.Code), MaxCodeBytes>>10)
	case len(req.Tools) > 0 && req.Caller == nil:
		return errcode.New(errcode.NotEnabled, "tools given but no upstream servers are configured")
	case req.Stdin != nil:
		return errcode.New(errcode.InvalidParams, "stdin is not available in code mode (its channel uses it); pass data in context")
	}
	if req.Language == "" {
		req.Language = runtime.TypeScript
	}
	if req.Language != runtime.TypeScript && req.Language != runtime.Python {
		return errcode.New(errcode.InvalidLanguage, "code mode runs TypeScript/JavaScript or Python, not %s", req.Language)
	}
	return nil
}

// runChannel is one code-mode run's side of the channel (engine.Channel):
// a pipe for the program's stdin, the Channel on its stdout, the bridge
// answering tool calls, and the envelope the program sends last.
type runChannel struct {
	ctx    context.Context
	req    Request
	mark   string
	src    string // the wrapped program, to map stack traces back
	r, w   *os.File
	bridge *Bridge
	ch     *Channel
	mu     sync.Mutex
	env    json.RawMessage
}

func newRunChannel(ctx context.Context, req Request, mark string) (*runChannel, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c := &runChannel{ctx: ctx, req: req, mark: mark, r: r, w: w}
	if len(req.Tools) > 0 {
		c.bridge = NewBridge(req.Caller, req.Tools, req.Bridge)
	}
	return c, nil
}

// Stdin is the read end of the pipe the channel writes to.
func (c *runChannel) Stdin() io.Reader { return c.r }

// Stdout makes the Channel that demultiplexes the program's stdout.
func (c *runChannel) Stdout(sink io.Writer) io.Writer {
	c.ch = NewChannel(c.ctx, c.mark, c.w, sink, c.handle)
	return c.ch
}

func (c *runChannel) handle(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error) {
	switch {
	case op == "done":
		c.mu.Lock()
		c.env = append(json.RawMessage(nil), params...)
		c.mu.Unlock()
		return nil, nil
	case c.bridge != nil:
		return c.bridge.Handle(ctx, op, params)
	}
	return nil, fmt.Errorf("no upstream tools were injected into this execution")
}

// Finish closes the channel and completes res from the envelope.
func (c *runChannel) Finish(res engine.Result, timeout time.Duration) (engine.Result, []execlog.ToolCall) {
	_ = c.w.Close()
	_ = c.r.Close()
	if c.ch != nil {
		c.ch.Close()
	}
	env, envErr := c.envelope()
	res = fillResult(res, len(c.req.Code), timeout, env, envErr)
	if e := res.CodeError; e != nil && e.Stack != "" && c.req.Language == runtime.TypeScript {
		e.Stack, e.Line, e.Column = mapTSStack(e.Stack, c.src, strings.Count(c.req.Code, "\n")+1)
	}
	if c.bridge == nil {
		return res, nil
	}
	return res, c.bridge.Calls()
}

// envelope is the program's report, or why there is none.
func (c *runChannel) envelope() (*Envelope, error) {
	c.mu.Lock()
	data := c.env
	c.mu.Unlock()
	if data == nil {
		return nil, errors.New("the code ended without returning (did it call process.exit or crash?)")
	}
	env, err := Decode(data)
	return &env, err
}

// fillResult adds code mode's result, logs, metrics and error to res.
func fillResult(res engine.Result, codeBytes int, timeout time.Duration, env *Envelope, envErr error) engine.Result {
	res.Metrics = &Metrics{ExecutionTimeMs: float64(res.DurationMs), InputSizeBytes: codeBytes}
	res.Logs = &[]string{}
	res.Value = json.RawMessage("null") // result is always present, null when nothing came back
	switch {
	case res.CompileError != nil:
		ce := res.CompileError
		res.CodeError = &Error{Type: "SyntaxError", Message: ce.Text, Line: ce.Line - LineOffset, Column: ce.Column}
		msg := fmt.Sprintf("SyntaxError at line %d, column %d: %s", res.CodeError.Line, ce.Column, ce.Text)
		res.ErrorMessage, res.Stderr = &msg, msg+"\n"
	case res.TimedOut:
		res.CodeError = &Error{Type: "TimeoutError", Message: fmt.Sprintf("Execution exceeded %s", engine.FormatSeconds(timeout))}
	case env != nil:
		return envelopeResult(res, env)
	default:
		if res.Status == engine.StatusSuccess {
			msg := envErr.Error()
			res.Status, res.Success, res.ErrorMessage = engine.StatusExecutionError, false, &msg
		}
		res.CodeError = &Error{Type: "RuntimeError", Message: deref(res.ErrorMessage)}
	}
	return res
}

func envelopeResult(res engine.Result, env *Envelope) engine.Result {
	logs := env.Logs
	if logs == nil {
		logs = []string{}
	}
	res.Logs = &logs
	if len(env.Result) > 0 && json.Valid(env.Result) {
		res.Metrics.OutputSizeBytes = len(env.Result)
		res.Value = env.Result
	}
	if !env.OK && env.Error != nil {
		res.CodeError = env.Error
		msg := env.Error.Type + ": " + env.Error.Message
		if env.Error.Name != "" {
			msg = env.Error.Name + ": " + env.Error.Message
		}
		res.Status, res.Success, res.ErrorMessage = engine.StatusExecutionError, false, &msg
	}
	return res
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// frameMark is a fresh random token that prefixes the program's frames.
func frameMark() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "\x1ecx:" + hex.EncodeToString(b[:]) + ":"
}
