package engine

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

	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
)

// MaxCodeModeBytes is seed 004's limit on submitted code.
const MaxCodeModeBytes = 100 << 10

// CodeModeRequest is a seed 004 execution: code run as an async function
// body with Context injected and the Tools of upstream MCP servers bound as
// objects whose calls cross the sandbox boundary over the channel.
type CodeModeRequest struct {
	// Language is runtime.TypeScript (also for JavaScript) or runtime.Python.
	Language   string
	Code       string
	Intent     string
	Context    map[string]any
	Stdin      *string
	Timeout    time.Duration
	WorkingDir string
	Call       execlog.CallContext
	Observe    output.Observer
	// Tools are the injected upstream tools; Caller calls them (required
	// when Tools is not empty). Bridge limits the calls.
	Tools  []codemode.Tool
	Caller codemode.Caller
	Bridge codemode.BridgeOptions
	// MemoryBytes, if positive, replaces the engine's memory limit.
	MemoryBytes int64
}

// ExecuteCodeMode runs a code-mode request. Like Execute, invalid requests
// return an error; code that fails is a Result whose CodeError says how.
func (e *Engine) ExecuteCodeMode(ctx context.Context, req CodeModeRequest) (Result, error) {
	if err := validateCodeMode(&req); err != nil {
		return Result{}, err
	}
	id := execlog.NewID("exec_")
	wo := codemode.WrapOptions{Tools: req.Tools, Mark: frameMark()}
	wrap := codemode.Wrap
	if req.Language == runtime.Python {
		wrap = codemode.WrapPython
	}
	src, err := wrap(req.Code, req.Context, wo)
	if err != nil {
		return Result{}, err
	}
	if req.Timeout == 0 {
		req.Timeout = e.opts.DefaultTimeout
	}
	dir, disk, cleanup, err := e.workspace(req.WorkingDir, false)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	cm, err := e.newCodeModeIO(ctx, req, wo.Mark)
	if err != nil {
		return Result{}, err
	}
	started := time.Now()
	logReq := Request{Language: req.Language, Code: req.Code, Tool: "execute_code", Context: req.Call, io: cm.rio}
	e.LogStarted(ctx, id, req.Language, dir.Path, logReq, started)
	res := e.runCode(ctx, id, req.Language, dir.Path, disk, Request{Code: src, Timeout: req.Timeout, io: cm.rio, Observe: req.Observe, dirWritable: dir.Writable}, nil)
	env, envErr := cm.finish()
	res.WorkingDir, res.WorkingDirNote = dir.Path, e.WorkingDirNote(req.WorkingDir, dir)
	res = fillCodeMode(res, req, env, envErr)
	res.LogError = e.logExecution(ctx, res, logReq, started)
	return res, nil
}

func validateCodeMode(req *CodeModeRequest) error {
	switch {
	case strings.TrimSpace(req.Code) == "":
		return errors.New("code is empty")
	case len(req.Code) > MaxCodeModeBytes:
		return fmt.Errorf("code is %d bytes, over the %d KB limit of code mode", len(req.Code), MaxCodeModeBytes>>10)
	case len(req.Tools) > 0 && req.Caller == nil:
		return errors.New("tools given but no upstream servers are configured")
	case req.Stdin != nil:
		return errors.New("stdin is not available in code mode (its channel uses it); pass data in context")
	}
	if req.Language == "" {
		req.Language = runtime.TypeScript
	}
	if req.Language != runtime.TypeScript && req.Language != runtime.Python {
		return fmt.Errorf("code mode runs TypeScript/JavaScript or Python, not %s", req.Language)
	}
	return nil
}

// codeModeIO is one code-mode run's channel: a pipe for the program's
// stdin, the channel on its stdout, the bridge answering tool calls, and the
// envelope the program sends last.
type codeModeIO struct {
	rio  *runIO
	r, w *os.File
	ch   *codemode.Channel
	mu   sync.Mutex
	env  json.RawMessage
}

func (e *Engine) newCodeModeIO(ctx context.Context, req CodeModeRequest, mark string) (*codeModeIO, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	c := &codeModeIO{rio: &runIO{intent: req.Intent, stdin: r}, r: r, w: w}
	if req.MemoryBytes > 0 {
		l := e.opts.Limits
		l.MemoryBytes = req.MemoryBytes
		c.rio.limits = &l
	}
	var bridge *codemode.Bridge
	if len(req.Tools) > 0 {
		bridge = codemode.NewBridge(req.Caller, req.Tools, req.Bridge)
		c.rio.toolCalls = bridge.Calls
	}
	handle := func(ctx context.Context, op string, params json.RawMessage) (json.RawMessage, error) {
		switch {
		case op == "done":
			c.mu.Lock()
			c.env = append(json.RawMessage(nil), params...)
			c.mu.Unlock()
			return nil, nil
		case bridge != nil:
			return bridge.Handle(ctx, op, params)
		}
		return nil, fmt.Errorf("no upstream tools were injected into this execution")
	}
	c.rio.wrapStdout = func(sink io.Writer) io.Writer {
		c.ch = codemode.NewChannel(ctx, mark, w, sink, handle)
		return c.ch
	}
	return c, nil
}

// finish closes the channel once the program is gone and returns its
// envelope, or why there is none.
func (c *codeModeIO) finish() (*codemode.Envelope, error) {
	_ = c.w.Close()
	_ = c.r.Close()
	if c.ch != nil {
		c.ch.Close()
	}
	c.mu.Lock()
	data := c.env
	c.mu.Unlock()
	if data == nil {
		return nil, errors.New("the code ended without returning (did it call process.exit or crash?)")
	}
	env, err := codemode.Decode(data)
	return &env, err
}

// fillCodeMode adds seed 004's result, logs, metrics and error to res.
func fillCodeMode(res Result, req CodeModeRequest, env *codemode.Envelope, envErr error) Result {
	res.Metrics = &codemode.Metrics{ExecutionTimeMs: float64(res.DurationMs), InputSizeBytes: len(req.Code)}
	res.Logs = []string{}
	res.Value = json.RawMessage("null") // 004: result is always present
	switch {
	case res.compileErr != nil:
		ce := res.compileErr
		res.CodeError = &codemode.Error{Type: "SyntaxError", Message: ce.Text, Line: ce.Line - codemode.LineOffset, Column: ce.Column}
		msg := fmt.Sprintf("SyntaxError at line %d, column %d: %s", res.CodeError.Line, ce.Column, ce.Text)
		res.ErrorMessage, res.Stderr = &msg, msg+"\n"
	case res.TimedOut:
		res.CodeError = &codemode.Error{Type: "TimeoutError", Message: fmt.Sprintf("Execution exceeded %s", formatSeconds(req.Timeout))}
	case env != nil:
		return envelopeResult(res, env)
	default:
		if res.Status == StatusSuccess {
			msg := envErr.Error()
			res.Status, res.Success, res.ErrorMessage = StatusExecutionError, false, &msg
		}
		res.CodeError = &codemode.Error{Type: "RuntimeError", Message: deref(res.ErrorMessage)}
	}
	return res
}

func envelopeResult(res Result, env *codemode.Envelope) Result {
	res.Logs = env.Logs
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
		res.Status, res.Success, res.ErrorMessage = StatusExecutionError, false, &msg
	}
	return res
}

// frameMark is a fresh random token that prefixes the program's frames.
func frameMark() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "\x1ecx:" + hex.EncodeToString(b[:]) + ":"
}
