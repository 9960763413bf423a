package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// limitsEngine is an engine over b that logs its executions; entries
// returns what it logged.
func limitsEngine(t *testing.T, b sandbox.Backend) (e *engine.Engine, entries func() []execlog.Entry) {
	t.Helper()
	log, err := execlog.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var logged []execlog.Entry
	log.ObserveExecutions(func(en execlog.Entry) { mu.Lock(); logged = append(logged, en); mu.Unlock() })
	langs := runtime.Fixed(map[string]string{runtime.Python: "/usr/bin/python3", runtime.Bash: "/bin/bash"})
	e, err = engine.New(engine.Options{
		SandboxDir: t.TempDir(), DefaultTimeout: 5 * time.Second, MaxTimeout: time.Minute,
		KillGrace: 50 * time.Millisecond, Output: output.Limits{Max: 1000, Head: 400, Tail: 400},
		BaseEnv: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{MemoryBytes: 512 << 20, Pids: 64, CPUs: 1, DiskBytes: 256 << 20},
	}, engine.Deps{Backend: b, Languages: langs, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, func() []execlog.Entry { mu.Lock(); defer mu.Unlock(); return append([]execlog.Entry(nil), logged...) }
}

// byLimits is a scripted Enforcement that depends on the spec, so a test
// sees that the engine asks about the spec it starts: memory is held only
// when the run has a memory limit.
func byLimits(spec sandbox.Spec) sandbox.Enforcement {
	return sandbox.Enforcement{Memory: sandbox.Mechanism(spec.Limits.MemoryBytes, sandbox.EnforcedCgroup), Pids: sandbox.EnforcedRlimit,
		CPU: sandbox.EnforcedNone, Disk: sandbox.TmpfsDisk(spec.Limits.DiskBytes)}
}

// TestResultLimits: every kind of run's result and log entry carries the
// backend's Enforcement of the spec it started, and nothing when the
// backend does not say or nothing started.
func TestResultLimits(t *testing.T) {
	held := &sandbox.Enforcement{Memory: "cgroup", Pids: "rlimit per process", CPU: "none", Disk: "tmpfs 256 MiB"}
	ok := func(sandbox.Spec) sandboxfake.Outcome { return sandboxfake.Outcome{Stdout: "hi\n"} }
	failed := func(sandbox.Spec) sandboxfake.Outcome {
		return sandboxfake.Outcome{StartErr: errors.New("no sandbox today")}
	}
	for _, tc := range []struct {
		name    string
		backend sandbox.Backend
		run     func(*engine.Engine) engine.Result
		want    *sandbox.Enforcement
	}{
		{"code", sandboxfake.New(ok, true).WithEnforcement(byLimits), execute(engine.Request{Language: "python", Code: "x"}), held},
		{"code, timed out", sandboxfake.New(func(sandbox.Spec) sandboxfake.Outcome { return sandboxfake.Outcome{Duration: time.Hour} }, true).WithEnforcement(byLimits),
			execute(engine.Request{Language: "python", Code: "x", Timeout: 50 * time.Millisecond}), held},
		{"low CPU weight", sandboxfake.New(ok, true).WithEnforcement(byLimits), execute(engine.Request{Language: "python", Code: "x", Background: true}), held},
		{"process", sandboxfake.New(ok, true).WithEnforcement(byLimits), func(e *engine.Engine) engine.Result {
			return e.RunProcess(context.Background(), engine.ProcessRequest{Argv: []string{"/bin/true"}, Lang: "process"})
		}, held},
		{"the fake's default holds nothing", sandboxfake.New(ok, true), execute(engine.Request{Language: "python", Code: "x"}), &sandbox.Unenforced},
		{"a backend that does not say", struct{ sandbox.Backend }{sandboxfake.New(ok, true)}, execute(engine.Request{Language: "python", Code: "x"}), nil},
		{"nothing started", sandboxfake.New(failed, true).WithEnforcement(byLimits), execute(engine.Request{Language: "python", Code: "x"}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, entries := limitsEngine(t, tc.backend)
			res := tc.run(e)
			if diff := cmp.Diff(tc.want, res.Limits); diff != "" {
				t.Errorf("result limits (-want +got)\n%s", diff)
			}
			logged := entries()
			if len(logged) != 1 {
				t.Fatalf("%d log entries, want 1", len(logged))
			}
			if diff := cmp.Diff(tc.want, logged[0].Limits); diff != "" {
				t.Errorf("log entry limits (-want +got)\n%s", diff)
			}
		})
	}
}

// TestResultLimitsFollowTheRunsSpec: a run's own memory limit (a request's
// MemoryBytes) is the one the backend is asked about.
func TestResultLimitsFollowTheRunsSpec(t *testing.T) {
	b := sandboxfake.New(sandboxfake.Echo(""), true)
	var asked []sandbox.Limits
	var mu sync.Mutex
	b.WithEnforcement(func(s sandbox.Spec) sandbox.Enforcement {
		mu.Lock()
		asked = append(asked, s.Limits)
		mu.Unlock()
		return byLimits(s)
	})
	e, _ := limitsEngine(t, b)
	res := execute(engine.Request{Language: "python", Code: "x", MemoryBytes: 64 << 20, NoLog: true})(e)
	want := []sandbox.Limits{{MemoryBytes: 64 << 20, Pids: 64, CPUs: 1, DiskBytes: 256 << 20}}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("limits the backend was asked about (-want +got)\n%s", diff)
	}
	if got := b.Specs()[0].Limits; got != asked[0] {
		t.Errorf("started with %+v, asked about %+v", got, asked[0])
	}
	if res.Limits == nil || res.Limits.Memory != "cgroup" {
		t.Errorf("limits %+v, want memory held by cgroup", res.Limits)
	}
}

// TestStartProcessLimits: a long-lived process (a session's interpreter)
// is started with the Enforcement of its spec.
func TestStartProcessLimits(t *testing.T) {
	e, _ := limitsEngine(t, sandboxfake.New(func(sandbox.Spec) sandboxfake.Outcome { return sandboxfake.Outcome{Duration: time.Hour} }, true).WithEnforcement(byLimits))
	ws, err := e.Workspace(context.Background(), "sess_limits", "")
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	p, limits, err := e.StartProcess(context.Background(), engine.StartRequest{ID: "sess_limits", Argv: []string{"/usr/bin/python3"}, Lang: "python", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Kill()
	_ = p.Release(time.Second)
	want := &sandbox.Enforcement{Memory: "cgroup", Pids: "rlimit per process", CPU: "none", Disk: "tmpfs 256 MiB"}
	if diff := cmp.Diff(want, limits); diff != "" {
		t.Errorf("limits (-want +got)\n%s", diff)
	}
}

// execute runs req on an engine and fails the test on an error.
func execute(req engine.Request) func(*engine.Engine) engine.Result {
	return func(e *engine.Engine) engine.Result {
		res, err := e.Execute(context.Background(), req)
		if err != nil {
			panic(err)
		}
		return res
	}
}
