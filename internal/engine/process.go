package engine

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/sandbox"
)

// ProcessRequest is one argv program run to completion and logged like
// code (execute_command, execute_process).
type ProcessRequest struct {
	Argv []string
	// Lang names what ran in logs and results ("bash", "process") and
	// selects Options.ExtraEnv.
	Lang string
	// Dir is where it runs, already checked (ResolveDir). An empty Path
	// runs it in a fresh empty directory of codexec's own, which it may
	// not write.
	Dir pathguard.Dir
	// Given is the directory as the caller gave it ("" for none), for
	// the result's WorkingDirNote.
	Given   string
	Stdin   *string
	Timeout time.Duration // zero: the default
	// Log annotates the log entry (Tool, Code as the command line, Args,
	// Stdin, Context); its Observe sees the output as it runs.
	Log Request
}

// RunProcess runs req like Execute runs code: under the sandbox backend
// with the timeout, a bounded disk and HOME of its own, logged (with
// req.Log) and mapped to a Result with the same status rules. A run that
// could not be set up is a setup_error Result and is not logged.
func (e *Engine) RunProcess(ctx context.Context, req ProcessRequest) Result {
	if req.Timeout == 0 {
		req.Timeout = e.opts.DefaultTimeout
	}
	id := execlog.NewID("exec_")
	started := time.Now()
	res := Result{ExecutionID: id, Language: req.Lang, SandboxMode: e.backend.Name(), Artifacts: []string{}, WorkingDir: req.Dir.Path,
		WorkingDirNote: e.workingDirNote(req.Given, req.Dir)}
	home, cleanup, err := e.runHome(id)
	if err != nil {
		return setupError(res, fmt.Sprintf("cannot create the run's home directory: %v", err))
	}
	defer cleanup()
	ws, err := e.processWorkspace(id, req.Dir)
	if err != nil {
		return setupError(res, err.Error())
	}
	defer ws.Close()
	res.WorkingDir = ws.Dir.Path
	spec := processSpec{ID: id, Argv: req.Argv, Dir: ws.Dir.Path, DirWritable: req.Dir.Writable, DirOwner: dirOwner(req.Dir), Env: runEnv(e.opts, req.Lang, home),
		Timeout: req.Timeout, Network: !e.backend.Isolated(), TmpDir: ws.tmpDir(), DiskBytes: ws.diskBytes(),
		OnStdout: req.Log.Observe.For("stdout"), OnStderr: req.Log.Observe.For("stderr")}
	if req.Stdin != nil {
		spec.Stdin = strings.NewReader(*req.Stdin)
	}
	e.logStarted(ctx, id, req.Lang, ws.Dir.Path, req.Log, started)
	oc := e.runProcess(ctx, spec)
	res = ws.NoteDiskFull(fillOutcome(res, oc, req.Timeout, e.opts.Limits.MemoryBytes))
	if !req.Log.NoLog {
		res.LogError = e.logExecution(ctx, res, req.Log, nil, started)
	}
	return res
}

// processWorkspace is where an argv program runs: dir, or for an empty
// dir a fresh one of codexec's own (its disk bounded as a whole; a
// caller's directory only gets a bounded /tmp).
func (e *Engine) processWorkspace(id string, dir pathguard.Dir) (*Workspace, error) {
	if dir.Path != "" {
		return e.workspaceAt(dir, "", false)
	}
	path, err := e.newDir(id + "_cwd")
	if err != nil {
		return nil, err
	}
	return e.workspaceAt(pathguard.Dir{Path: path}, "", true)
}

// runHome returns an argv run's HOME. In subprocess mode it is a fresh
// directory (removed by cleanup): it keeps tools from writing into the
// server's home and marks the run's processes for the orphan sweep.
// Isolated modes use the sandbox's private /tmp, which vanishes with the
// run and needs no host directory.
func (e *Engine) runHome(id string) (string, func(), error) {
	if e.backend.Isolated() {
		return "/tmp", func() {}, nil
	}
	home, err := e.newDir(id)
	if err != nil {
		return "", nil, err
	}
	return home, func() { _ = e.removeDir(home) }, nil
}

// StartRequest is a long-lived program (a session's interpreter driver)
// started on the run path: the spec gets the engine's mounts, limits and
// environment, and the workspace's directory and bounded /tmp, as one-shot
// runs do; it has no timeout.
type StartRequest struct {
	// ID names the process in the sandbox backend.
	ID   string
	Argv []string
	// Lang selects Options.ExtraEnv.
	Lang string
	// Workspace is the program's directory and HOME.
	Workspace *Workspace
	// SearchPath puts directories first on search-path variables
	// ("PYTHONPATH=/dir"): each becomes the directory followed by the
	// engine's own value for Lang, if any.
	SearchPath []string
	// Mounts are added after the engine's.
	Mounts         []sandbox.Mount
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Network is the interpreter's network (BindNetwork); nil for none.
	Network *Network
}

// StartProcess starts req and returns the running process and which of
// its limits hold and how (nil: the backend does not say); the caller
// waits for it, kills and releases it.
func (e *Engine) StartProcess(ctx context.Context, req StartRequest) (sandbox.Process, *sandbox.Enforcement, error) {
	ws := req.Workspace
	env := prependPaths(runEnv(e.opts, req.Lang, ws.Dir.Path), req.SearchPath)
	spec := sandboxSpec(e.opts, processSpec{ID: req.ID, Argv: req.Argv, Dir: ws.Dir.Path, DirWritable: ws.Dir.Writable, DirOwner: dirOwner(ws.Dir),
		Env: env, Stdin: req.Stdin, Mounts: req.Mounts, TmpDir: ws.tmpDir()}, e.opts.Limits)
	spec.Stdout, spec.Stderr = req.Stdout, req.Stderr
	if req.Network != nil {
		spec.Egress, spec.Env = req.Network.n.egressOf(), append(spec.Env, req.Network.n.environ()...)
	}
	p, err := e.backend.Start(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	return p, e.limitsOf(spec, ws.diskBytes()), nil
}

// prependPaths returns env with each "KEY=dir" of first as KEY=dir:old,
// where old is env's value of KEY (dropped from its place), in first's
// order after the rest of env.
func prependPaths(env, first []string) []string {
	old := map[string]string{}
	for _, kv := range first {
		k, _, _ := strings.Cut(kv, "=")
		old[k] = ""
	}
	out := env[:0:0]
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := old[k]; ok {
			old[k] = v
			continue
		}
		out = append(out, kv)
	}
	for _, kv := range first {
		k, dir, _ := strings.Cut(kv, "=")
		if v := old[k]; v != "" {
			dir += ":" + v
		}
		out = append(out, k+"="+dir)
	}
	return out
}
