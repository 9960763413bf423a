package engine

import "context"

// A background run (package runs) is started by a call that returns as soon
// as the run has started, with its execution id, and its log records say it
// is a background run. The run reaches the engine through several packages
// (scripts, shell, codemode), so the hook travels in the run's context
// instead of in each of their requests.

type startKey struct{}

// OnStart returns ctx carrying fn. A logged run (Execute, RunProcess, not
// NoLog) started with the returned context is a background run: it calls fn
// with its execution id once it is recorded as started (the started record
// and the in-flight journal written, so a server killed from then on logs
// it as lost), before its program starts, and its log records are marked
// background. A request rejected before that point never calls fn.
func OnStart(ctx context.Context, fn func(id string)) context.Context {
	return context.WithValue(ctx, startKey{}, fn)
}

// startHook is the function OnStart put in ctx, or nil.
func startHook(ctx context.Context) func(string) {
	fn, _ := ctx.Value(startKey{}).(func(string))
	return fn
}

// Started tells the background run ctx belongs to, if any, that its run id
// is recorded as started: for runs that do not go through Execute (a
// session's code, a package install), called once they are recorded.
func Started(ctx context.Context, id string) {
	if fn := startHook(ctx); fn != nil {
		fn(id)
	}
}

// Background reports whether ctx is a background run's (OnStart): its log
// records are marked background.
func Background(ctx context.Context) bool { return startHook(ctx) != nil }
