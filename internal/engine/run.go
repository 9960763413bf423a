package engine

import (
	"context"
	"io"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/tracing"
)

// processSpec is one program to run to completion under the engine's sandbox
// backend with a timeout (runProcess). It is the shared runner for code
// (Execute) and argv programs (RunProcess); neither starts processes any
// other way.
type processSpec struct {
	ID   string
	Argv []string
	Dir  string
	// DirWritable: the program may write Dir (sandbox.Spec.DirWritable).
	DirWritable bool
	// DirOwner: the program has Dir's owner's rights (sandbox.Spec.DirOwner).
	DirOwner *sandbox.Owner
	Env      []string
	Stdin    io.Reader
	Timeout  time.Duration
	// ProgramDir is exposed read-only at sandbox.ProgramPath (may be empty).
	ProgramDir string
	Mounts     []sandbox.Mount
	// OnStdout/OnStderr observe output chunks while the program runs (for
	// streaming); they must not retain the slice. May be nil.
	OnStdout, OnStderr func([]byte)
	// Network asks to keep host networking (sandbox.Spec.Network).
	Network bool
	// Egress is the run's network through the egress owner
	// (sandbox.Spec.Egress; attachNetwork), nil for none.
	Egress sandbox.Egress
	// TmpDir is exposed as /tmp by isolated backends (sandbox.Spec.TmpDir).
	TmpDir string
	// DiskBytes is the size of the bounded disk TmpDir (and an owned
	// workspace) lie on, 0 for none: the run's reported disk limit.
	DiskBytes int64
	// WrapStdout, if set, sits between the program's stdout and the output
	// sink (code mode's channel demultiplexes its frames there).
	WrapStdout func(sink io.Writer) io.Writer
	// Limits, if set, replaces the engine's limits for this run.
	Limits *sandbox.Limits
	// Warm lets the backend serve the run from a warm runner
	// (sandbox.Spec.Warm).
	Warm string
	// Background: low CPU weight (sandbox.Spec.Background).
	Background bool
}

// outcome is how a process run ended. Stdout and Stderr are already
// truncated per the output limits.
type outcome struct {
	Stdout, Stderr string
	Truncated      bool
	Exit           sandbox.Exit
	TimedOut       bool
	Cancelled      bool
	Duration       time.Duration
	// StartErr is set when the program could not be started at all.
	StartErr error
	// Limits is which limits held for the run and how (nil: the backend
	// does not say).
	Limits *sandbox.Enforcement
}

// tracer records the engine's spans: workspace, build, sandbox start,
// run and teardown, artifacts and the log write of each run.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/engine")

// runProcess starts spec, enforces its timeout (SIGTERM to the whole run,
// SIGKILL after the kill grace), and returns once every process of the run is
// gone and output is drained. Cancelling ctx kills the run at once.
func (e *Engine) runProcess(ctx context.Context, spec processSpec) outcome {
	outSink := output.NewSink(e.opts.Output, spec.OnStdout)
	errSink := output.NewSink(e.opts.Output, spec.OnStderr)
	var stdout io.Writer = outSink
	if spec.WrapStdout != nil {
		stdout = spec.WrapStdout(outSink)
	}
	limits := e.opts.Limits
	if spec.Limits != nil {
		limits = *spec.Limits
	}
	start := time.Now()
	sspec := sandboxSpec(e.opts, spec, limits)
	sspec.Stdout, sspec.Stderr = stdout, errSink
	sctx, span := tracing.Start(ctx, tracer, "sandbox.start")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("codexec.sandbox.mode", e.backend.Name()), attribute.String("codexec.sandbox.warm_kind", sspec.Warm))
	}
	proc, err := e.backend.Start(sctx, sspec)
	if err == nil && span.IsRecording() {
		span.SetAttributes(attribute.String("codexec.sandbox.path", sandbox.PathOf(proc)))
	}
	tracing.End(span, err)
	if err != nil {
		// A start that failed because the call was cancelled is a cancellation.
		return outcome{StartErr: err, Cancelled: ctx.Err() != nil, Duration: time.Since(start)}
	}
	started := time.Since(start)
	_, span = tracing.Start(ctx, tracer, "sandbox.run")
	oc := e.waitWithTimeout(ctx, proc, spec.Timeout)
	span.End()
	oc.Limits = e.limitsOf(sspec, spec.DiskBytes)
	oc.Duration = time.Since(start)
	_, span = tracing.Start(ctx, tracer, "sandbox.teardown")
	err = proc.Release(2 * time.Second)
	tracing.End(span, err)
	if err != nil {
		slog.Warn("sandbox release failed", "id", spec.ID, "err", err)
	}
	slog.Debug("run timing", "id", spec.ID, "start_ms", started.Seconds()*1000, "run_ms", (oc.Duration-started).Seconds()*1000, "release_ms", (time.Since(start)-oc.Duration).Seconds()*1000)
	var t1, t2 bool
	oc.Stdout, t1 = outSink.Result()
	oc.Stderr, t2 = errSink.Result()
	oc.Truncated = t1 || t2
	return oc
}

// sandboxSpec is spec as the backend takes it (no output writers): the
// engine's mounts before the spec's own, and a deadline after which the
// backend ends the run by itself when spec has a timeout.
func sandboxSpec(opts Options, spec processSpec, limits sandbox.Limits) sandbox.Spec {
	s := sandbox.Spec{
		ID: spec.ID, Argv: spec.Argv, Dir: spec.Dir, DirWritable: spec.DirWritable, DirOwner: spec.DirOwner, Env: spec.Env, Stdin: spec.Stdin, ProgramDir: spec.ProgramDir,
		Mounts: append(append([]sandbox.Mount(nil), opts.Mounts...), spec.Mounts...), Limits: limits,
		Network: spec.Network, Egress: spec.Egress, Warm: spec.Warm, TmpDir: spec.TmpDir, Background: spec.Background,
	}
	if spec.Timeout > 0 {
		s.Deadline = spec.Timeout + opts.KillGrace + deadlineSlack
	}
	return s
}

// deadlineSlack is how long after the timeout and the kill grace a backend
// ends a run by itself (sandbox.Spec.Deadline): the server, while it lives,
// has always stopped the run by then; the bound matters when it died.
const deadlineSlack = 2 * time.Second

// PrewarmSpec is the spec whose warm runners serve one-shot runs of lang
// under an Engine made with opts and langs (false: lang has none). It lets
// a backend start one before the Engine exists (sandbox.NamespaceOptions).
func PrewarmSpec(opts Options, langs *runtime.Set, lang string) (sandbox.Spec, bool) {
	kind := warmKind(lang)
	prog, err := langs.Build(lang, "", nil)
	if kind == "" || err != nil {
		return sandbox.Spec{}, false
	}
	env := runEnv(opts, lang, "/nonexistent")
	return sandboxSpec(opts, processSpec{ID: "prewarm", Argv: prog.Argv, Env: env, Warm: kind}, opts.Limits), true
}

// Prewarm asks the backend, if it keeps warm runners, to start runners for
// one-shot runs of each language, in order: each after the previous one's
// first runner is ready (at most prewarmStep), so that on a small machine
// the first language's runner is not slowed by the others. It returns at
// once. Languages without warm runners, and other backends, are ignored.
func (e *Engine) Prewarm(langs ...string) {
	w, ok := e.backend.(interface {
		Prewarm(sandbox.Spec)
		AwaitWarm(kind string, d time.Duration) (sandbox.PoolStat, bool)
	})
	if !ok {
		return
	}
	go func() {
		for _, lang := range langs {
			if spec, ok := PrewarmSpec(e.opts, e.langs, lang); ok {
				w.Prewarm(spec)
				w.AwaitWarm(spec.Warm, prewarmStep)
			}
		}
	}()
}

// prewarmStep bounds Prewarm's wait for one language's runner.
const prewarmStep = time.Second

type waitResult struct {
	exit sandbox.Exit
	err  error
}

func (e *Engine) waitWithTimeout(ctx context.Context, proc sandbox.Process, timeout time.Duration) outcome {
	done := make(chan waitResult, 1)
	go func() { ex, err := proc.Wait(); done <- waitResult{ex, err} }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var oc outcome
	var r waitResult
	select {
	case r = <-done:
	case <-timer.C:
		oc.TimedOut = true
		r = e.stop(proc, done)
	case <-ctx.Done():
		oc.Cancelled = true
		r = killUntilDone(proc, done)
	}
	if r.err != nil {
		slog.Warn("wait failed", "err", r.err)
	}
	oc.Exit = r.exit
	return oc
}

// stop terminates the run, escalating to SIGKILL after the kill grace.
func (e *Engine) stop(proc sandbox.Process, done <-chan waitResult) waitResult {
	_ = proc.Terminate()
	grace := time.NewTimer(e.opts.KillGrace)
	defer grace.Stop()
	select {
	case r := <-done:
		return r
	case <-grace.C:
		return killUntilDone(proc, done)
	}
}

// killRetry is how often killUntilDone kills again.
const killRetry = 50 * time.Millisecond

// killUntilDone kills the run, and again every killRetry until it is gone:
// a container CLI cannot kill a container it has not created yet, so a
// kill that comes while a container run is starting finds nothing, and a
// background run cancelled right after it started would otherwise run on to
// its end. (The namespace backend kills its launcher itself.)
func killUntilDone(proc sandbox.Process, done <-chan waitResult) waitResult {
	t := time.NewTicker(killRetry)
	defer t.Stop()
	for {
		_ = proc.Kill()
		select {
		case r := <-done:
			return r
		case <-t.C:
		}
	}
}
