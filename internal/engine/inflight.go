package engine

import (
	"context"
	"os"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/tenant"
)

// logStarted writes the started record of a run about to start (execution
// id, canonical language lang, directory dir, started at at) to the
// in-flight journal, so that a server killed while it runs has it logged as
// lost at the next start. The execution log itself gets one entry per run,
// when it ends: a reader taking the entry of an id gets its output. Nothing is written for req.NoLog or
// without a logger; a background run's OnStart hook is called after it
// (with or without a logger). The run's end is recorded by its execution
// entry (logExecution, LogResult).
func (e *Engine) logStarted(ctx context.Context, id, lang, dir string, req Request, at time.Time) {
	if req.NoLog {
		return
	}
	hook := startHook(ctx)
	if hook != nil {
		defer hook(id) // once recorded: a background run's call returns now
	}
	if e.log == nil {
		return
	}
	s := execlog.Started{ExecutionID: id, Tool: req.Tool, Language: lang, Code: req.Code, Args: req.Args,
		ScriptName: req.ScriptName, Stdin: req.Stdin, SandboxMode: e.backend.Name(), WorkingDir: dir,
		Context: req.Context, ExecutedAt: at.UTC(), Owner: tenant.From(ctx), Background: hook != nil}
	s.Intent = req.Intent
	e.opts.Journal.RunStarted(id, "", s)
}

// createdDir records a directory the engine created for a run, so that a
// killed server's is removed at the next start.
func (e *Engine) createdDir(dir string) { e.opts.Journal.DirCreated(dir) }

// removeDir removes a directory created by newDir (or for a run) and
// records its removal.
func (e *Engine) removeDir(dir string) error {
	err := os.RemoveAll(dir)
	if err == nil {
		e.opts.Journal.DirRemoved(dir)
	}
	return err
}
