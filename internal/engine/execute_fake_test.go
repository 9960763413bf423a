package engine_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxfake"
)

// fakeEngine is an engine over the fake backend: nothing is executed, so
// these tests pin the engine's own contract (statuses, exit codes,
// timeouts, artifacts, what it asks the backend for) in milliseconds.
func fakeEngine(t *testing.T, script sandboxfake.Script, isolated bool) (*engine.Engine, *sandboxfake.Backend) {
	t.Helper()
	b := sandboxfake.New(script, isolated)
	langs := runtime.Fixed(map[string]string{runtime.Python: "/usr/bin/python3", runtime.Node: "/usr/bin/node", runtime.Bash: "/bin/bash"})
	e, err := engine.New(engine.Options{
		SandboxDir: t.TempDir(), DefaultTimeout: 5 * time.Second, MaxTimeout: time.Minute,
		KillGrace: 50 * time.Millisecond, Output: output.Limits{Max: 1000, Head: 400, Tail: 400},
		BaseEnv: []string{"PATH=/usr/bin:/bin"},
	}, engine.Deps{Backend: b, Languages: langs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e, b
}

// TestExecuteOutcomes: how each way a program can end becomes a result.
func TestExecuteOutcomes(t *testing.T) {
	exit := func(code int) *int { return &code }
	for _, tc := range []struct {
		name    string
		outcome sandboxfake.Outcome
		timeout time.Duration
		want    engine.Result
	}{
		{"success", sandboxfake.Outcome{Stdout: "6\n"}, 0,
			engine.Result{Success: true, Status: "success", Stdout: "6\n", ExitCode: exit(0)}},
		{"non-zero exit", sandboxfake.Outcome{Stderr: "boom\n", Exit: sandbox.Exit{Code: 3}}, 0,
			engine.Result{Status: "execution_error", Stderr: "boom\n", ExitCode: exit(3)}},
		{"killed by a signal", sandboxfake.Outcome{Exit: sandbox.Exit{Code: -1, Signal: int(syscall.SIGSEGV)}}, 0,
			engine.Result{Status: "execution_error"}},
		{"out of memory", sandboxfake.Outcome{Exit: sandbox.Exit{Code: -1, Signal: int(syscall.SIGKILL), OOMKilled: true}}, 0,
			engine.Result{Status: "execution_error", OOMKilled: true}},
		{"timeout", sandboxfake.Outcome{Duration: time.Hour}, 100 * time.Millisecond,
			engine.Result{Status: "timeout", TimedOut: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := fakeEngine(t, func(sandbox.Spec) sandboxfake.Outcome { return tc.outcome }, true)
			res, err := e.Execute(context.Background(), engine.Request{Language: "python", Code: "x", Timeout: tc.timeout, NoLog: true})
			if err != nil {
				t.Fatal(err)
			}
			got := engine.Result{Success: res.Success, Status: res.Status, Stdout: res.Stdout, Stderr: res.Stderr,
				ExitCode: res.ExitCode, TimedOut: res.TimedOut, OOMKilled: res.OOMKilled}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got)\n%s", diff)
			}
			if (res.Status == "success") != (res.ErrorMessage == nil) {
				t.Errorf("error_message %v with status %s", res.ErrorMessage, res.Status)
			}
		})
	}
}

// TestExecuteAsksTheBackend: the spec the engine gives the backend for a
// python run: the interpreter and the code, a workspace as cwd and HOME,
// a deadline past the timeout, and nothing of the server's environment
// beyond the base.
func TestExecuteAsksTheBackend(t *testing.T) {
	e, b := fakeEngine(t, sandboxfake.Echo(""), true)
	if _, err := e.Execute(context.Background(), engine.Request{Language: "python", Code: "print(1)", Timeout: time.Second, NoLog: true}); err != nil {
		t.Fatal(err)
	}
	specs := b.Specs()
	if len(specs) != 1 {
		t.Fatalf("%d specs, want 1", len(specs))
	}
	s := specs[0]
	if s.Argv[0] != "/usr/bin/python3" || !slices.Contains(s.Argv, "print(1)") {
		t.Errorf("argv %q: want the interpreter and the code", s.Argv)
	}
	if s.Dir == "" || !slices.Contains(s.Env, "PATH=/usr/bin:/bin") {
		t.Errorf("dir %q env %q: want a workspace and the base environment", s.Dir, s.Env)
	}
	if s.Deadline <= time.Second {
		t.Errorf("deadline %v: want past the 1s timeout, so the backend never ends a run the engine would not", s.Deadline)
	}
	for _, kv := range s.Env {
		if strings.HasPrefix(kv, "CODEXEC_") {
			t.Errorf("server setting %q leaked into the run's environment", kv)
		}
	}
}

// TestExecuteArtifactsAndStartErrors: files the program writes are its
// artifacts; a backend that cannot start the program gives a setup error
// with the reason, never a crash.
func TestExecuteArtifactsAndStartErrors(t *testing.T) {
	e, _ := fakeEngine(t, func(sandbox.Spec) sandboxfake.Outcome {
		return sandboxfake.Outcome{Files: map[string]string{"out/plot.png": "png", "data.csv": "a,b\n"}}
	}, true)
	res, err := e.Execute(context.Background(), engine.Request{Language: "python", Code: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"data.csv", "out/plot.png"}, slices.Sorted(slices.Values(res.Artifacts))); diff != "" {
		t.Errorf("artifacts (-want +got)\n%s", diff)
	}
	e, _ = fakeEngine(t, func(sandbox.Spec) sandboxfake.Outcome {
		return sandboxfake.Outcome{StartErr: errors.New("no sandbox today")}
	}, true)
	res, err = e.Execute(context.Background(), engine.Request{Language: "python", Code: "x", NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != "setup_error" || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, "no sandbox today") {
		t.Errorf("status %s message %v: want setup_error with the backend's reason", res.Status, res.ErrorMessage)
	}
}
