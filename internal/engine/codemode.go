package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/codexec/codexec/internal/codemode"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/runtime"
)

// CodeModeRequest is a seed 004 execution: TypeScript run as an async
// function body with Context injected; Intent is recorded.
type CodeModeRequest struct {
	Code       string
	Intent     string
	Context    map[string]any
	Stdin      *string
	Timeout    time.Duration
	WorkingDir string
	Call       execlog.CallContext
}

// ExecuteCodeMode runs a code-mode request. Like Execute, invalid requests
// return an error; code that fails is a Result whose Error says how.
func (e *Engine) ExecuteCodeMode(ctx context.Context, req CodeModeRequest) (Result, error) {
	id := execlog.NewID("exec_")
	resultFile := codemode.ResultFilePrefix + id + ".json"
	src, err := codemode.Wrap(req.Code, req.Context, resultFile)
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
	started := time.Now()
	var env *codemode.Envelope
	var envErr error
	res := e.runCode(ctx, id, runtime.TypeScript, dir, disk, Request{Code: src, Stdin: req.Stdin, Timeout: req.Timeout}, func(dir string) {
		env, envErr = readEnvelope(filepath.Join(dir, resultFile))
	})
	res.WorkingDir = dir
	res = fillCodeMode(res, req, env, envErr)
	e.logExecution(res, Request{Language: runtime.TypeScript, Code: req.Code, Stdin: req.Stdin, Tool: "execute_code", Context: req.Call}, started)
	return res, nil
}

func readEnvelope(path string) (*codemode.Envelope, error) {
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.New("the code ended without returning (did it call process.exit or crash?)")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, codemode.MaxResultBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > codemode.MaxResultBytes {
		return nil, fmt.Errorf("result exceeds %d MiB", codemode.MaxResultBytes>>20)
	}
	env, err := codemode.Decode(data)
	return &env, err
}

// fillCodeMode adds seed 004's result, logs, metrics and error to res.
func fillCodeMode(res Result, req CodeModeRequest, env *codemode.Envelope, envErr error) Result {
	res.Metrics = &codemode.Metrics{ExecutionTimeMs: float64(res.DurationMs), InputSizeBytes: len(req.Code)}
	res.Logs = []string{}
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
	if len(env.Result) > 0 {
		res.Metrics.OutputSizeBytes = len(env.Result)
		_ = json.Unmarshal(env.Result, &res.Value)
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
