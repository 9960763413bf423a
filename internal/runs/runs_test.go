package runs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/pathguard"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/runtime"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tenant"
)

// TestMain lets this test binary act as the sandbox helper the backends
// re-execute.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// fixture is a real engine (subprocess backend), execution log with its
// index, and directory blob store, as the server has them.
type fixture struct {
	eng   *engine.Engine
	log   *execlog.Logger
	hist  logindex.Embedded
	store *files.DirStore
	dir   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	log, err := execlog.New(filepath.Join(dir, "logs"))
	if err != nil {
		t.Fatal(err)
	}
	langs := runtime.Discover(context.Background(), runtime.Overrides{}, os.Getenv("PATH"))
	eng, err := engine.New(engine.Options{
		SandboxDir: filepath.Join(dir, "sandbox"), DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute,
		KillGrace: time.Second, Output: output.Limits{Max: 10000, Head: 4000, Tail: 4000},
		BaseEnv: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=dumb"}, Home: dir, BaseDir: dir,
	}, engine.Deps{Backend: subprocess.New(sandbox.PoolOptions{}), Languages: langs, Guard: pathguard.New(pathguard.Options{Home: dir}), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	store, err := files.NewDirStore(filepath.Join(dir, "blobs"), files.DirOptions{TTL: time.Hour, MaxBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	idx := logindex.New(log.Dir(), filepath.Join(log.Dir(), logindex.FileName))
	t.Cleanup(func() { _ = idx.Close() })
	log.OnAppend(func(file string, _ int64, _ []byte) { idx.Notify(file) }) // as the app hooks them
	return &fixture{eng: eng, log: log, hist: logindex.Embedded{Log: log, Index: idx}, store: store, dir: dir}
}

// manager is a Manager on f's store and history, closed at cleanup.
func (f *fixture) manager(t *testing.T, opts Options) *Manager {
	t.Helper()
	opts.Dir = f.dir
	m := New(opts, Deps{Store: f.store, History: f.hist})
	t.Cleanup(m.Close)
	return m
}

// bash is the job of a background execute_code of bash code; done counts
// its Done calls.
func (f *fixture) bash(code string, done *atomic.Int32) Job {
	return Job{Tool: "execute_code", Done: func() { done.Add(1) }, Run: func(ctx context.Context, obs output.Observer) (Outcome, error) {
		res, err := f.eng.Execute(ctx, engine.Request{Language: "bash", Code: code, Tool: "execute_code", Observe: obs})
		if err != nil {
			return Outcome{}, err
		}
		if why := Stopped(ctx); why != "" && res.Status == engine.StatusCancelled {
			res.ErrorMessage = &why
		}
		return Outcome{Status: res.Status, Result: res}, nil
	}}
}

// start starts j for ctx's principal and returns its id.
func start(t *testing.T, ctx context.Context, m *Manager, j Job) string {
	t.Helper()
	v, out, err := m.Start(ctx, j)
	if err != nil || out != nil || v.Status != StatusRunning {
		t.Fatalf("start: %+v %+v %v", v, out, err)
	}
	return v.ExecutionID
}

// readAll reads run id to its end, as an agent does.
func readAll(t *testing.T, ctx context.Context, m *Manager, id string) (View, string, string) {
	t.Helper()
	var out, errOut strings.Builder
	rd := Read{Wait: 5 * time.Second}
	for range 200 {
		v, err := m.Get(ctx, id, rd)
		if err != nil {
			t.Fatal(err)
		}
		out.WriteString(v.Stdout)
		errOut.WriteString(v.Stderr)
		rd.StdoutOffset, rd.StderrOffset = v.NextStdoutOffset, v.NextStderrOffset
		if v.Status != StatusRunning && !v.More {
			return v, out.String(), errOut.String()
		}
	}
	t.Fatalf("run %s did not end", id)
	return View{}, "", ""
}

// awaitStored waits until run id's result is in the store.
func awaitStored(t *testing.T, m *Manager, id string) {
	t.Helper()
	for range 500 {
		m.mu.Lock()
		r := m.byID[id]
		m.mu.Unlock()
		if r != nil && func() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.stored }() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("run %s not stored", id)
}

// TestRunReadAndStored: a run's output is read by offsets while it runs and
// after it ended; its result is the engine's; once stored, a new Manager on
// the same store (a restarted server) reads the same.
func TestRunReadAndStored(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{})
	var done atomic.Int32
	id := start(t, context.Background(), m, f.bash("echo one; sleep 0.3; echo two; echo err >&2", &done))
	v, out, errOut := readAll(t, context.Background(), m, id)
	var res engine.Result
	if err := json.Unmarshal(v.Result, &res); err != nil {
		t.Fatal(err)
	}
	got := []any{v.Status, out, errOut, res.Status, res.Stdout, res.ExecutionID, v.Tool}
	want := []any{"success", "one\ntwo\n", "err\n", "success", "one\ntwo\n", id, "execute_code"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	awaitStored(t, m, id)
	if n := done.Load(); n != 1 {
		t.Errorf("Done called %d times", n)
	}
	for name, mm := range map[string]*Manager{"stored": m, "restarted": f.manager(t, Options{})} {
		v2, out2, err2 := readAll(t, context.Background(), mm, id)
		if v2.Status != "success" || out2 != out || err2 != errOut || string(v2.Result) != string(v.Result) {
			t.Errorf("%s: %+v %q %q", name, v2, out2, err2)
		}
	}
}

// TestRunOwnedByPrincipal: another principal's Get and Cancel read exactly
// as an unknown id's, and List shows each principal its own.
func TestRunOwnedByPrincipal(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{})
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	var done atomic.Int32
	id := start(t, alice, m, f.bash("sleep 30", &done))
	ghost := "exec_" + strings.Repeat("0", len(id)-5)
	_, errGhost := m.Get(bob, ghost, Read{})
	for name, call := range map[string]func() error{
		"get":    func() error { _, err := m.Get(bob, id, Read{}); return err },
		"cancel": func() error { _, err := m.Cancel(bob, id, time.Second); return err },
	} {
		err := call()
		if !errors.Is(err, ErrNotFound) || err.Error() != strings.ReplaceAll(errGhost.Error(), ghost, id) {
			t.Errorf("bob's %s: %v (unknown id: %v)", name, err, errGhost)
		}
	}
	if got := m.List(bob, "", 10); len(got) != 0 {
		t.Errorf("bob lists %v", got)
	}
	if got := m.List(alice, StatusRunning, 10); len(got) != 1 || got[0].ExecutionID != id {
		t.Errorf("alice lists %v", got)
	}
	if v, err := m.Cancel(alice, id, 10*time.Second); err != nil || v.Status != engine.StatusCancelled {
		t.Errorf("alice's cancel: %+v %v", v, err)
	}
}

// TestRunRejectedBeforeStart: a job rejected before its run starts is the
// call's error, frees its reservation and calls Done once.
func TestRunRejectedBeforeStart(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{MaxPerPrincipal: 1})
	var done atomic.Int32
	j := f.bash("echo x", &done)
	j.Run = func(ctx context.Context, obs output.Observer) (Outcome, error) {
		_, err := f.eng.Execute(ctx, engine.Request{Language: "cobol", Code: "x"})
		return Outcome{}, err
	}
	if _, _, err := m.Start(context.Background(), j); err == nil || !strings.Contains(err.Error(), "cobol") {
		t.Errorf("rejected start: %v", err)
	}
	if n := done.Load(); n != 1 {
		t.Errorf("Done called %d times", n)
	}
	id := start(t, context.Background(), m, f.bash("echo x", &done))
	readAll(t, context.Background(), m, id)
}

// TestRunBoundPerPrincipal: with MaxPerPrincipal runs running another start
// is refused; once one ended, a start drops the oldest ended run from the
// list, and Get still reads it from the store.
func TestRunBoundPerPrincipal(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{MaxPerPrincipal: 2})
	ctx := context.Background()
	var done atomic.Int32
	first := start(t, ctx, m, f.bash("sleep 30", &done))
	second := start(t, ctx, m, f.bash("sleep 30", &done))
	if _, _, err := m.Start(ctx, f.bash("echo x", &done)); !errors.Is(err, ErrLimit) {
		t.Fatalf("a third start: %v", err)
	}
	v, err := m.Cancel(ctx, first, 10*time.Second)
	var res engine.Result
	_ = json.Unmarshal(v.Result, &res)
	if err != nil || v.Status != engine.StatusCancelled || res.ErrorMessage == nil || *res.ErrorMessage != errCancelled.Error() {
		t.Fatalf("cancel: %+v %v", v, err)
	}
	awaitStored(t, m, first)
	third := start(t, ctx, m, f.bash("echo x", &done))
	var listed []string
	for _, s := range m.List(ctx, "", 10) {
		listed = append(listed, s.ExecutionID)
	}
	if diff := cmp.Diff([]string{third, second}, listed); diff != "" {
		t.Errorf("listed (-want +got):\n%s", diff)
	}
	if v, err := m.Get(ctx, first, Read{}); err != nil || v.Status != engine.StatusCancelled {
		t.Errorf("the dropped run: %+v %v", v, err)
	}
	m.Cancel(ctx, second, 10*time.Second)
}

// TestRunShutdown: at the shutdown's deadline running runs are cancelled,
// their results say why, and no run starts any more.
func TestRunShutdown(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{})
	var done atomic.Int32
	id := start(t, context.Background(), m, f.bash("sleep 30", &done))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if n := m.Shutdown(ctx, 10*time.Second); n != 1 {
		t.Errorf("Shutdown cancelled %d runs", n)
	}
	v, err := m.Get(context.Background(), id, Read{})
	var res engine.Result
	_ = json.Unmarshal(v.Result, &res)
	if err != nil || res.ErrorMessage == nil || *res.ErrorMessage != errShutdown.Error() {
		t.Errorf("after the shutdown: %+v %v", v, err)
	}
	if _, _, err := m.Start(context.Background(), f.bash("echo x", &done)); !errors.Is(err, ErrClosed) {
		t.Errorf("a start after the shutdown: %v", err)
	}
}

// TestRunLostFromHistory: a background run a killed server logged as lost
// is reported lost; another lost execution is not a run.
func TestRunLostFromHistory(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{})
	at := time.Now().UTC()
	bg := execlog.Started{ExecutionID: "exec_0000000000aa", Tool: "run_script", Language: "bash", ExecutedAt: at, Background: true}
	fg := execlog.Started{ExecutionID: "exec_0000000000bb", Tool: "execute_code", Language: "bash", ExecutedAt: at}
	for _, s := range []execlog.Started{bg, fg} {
		if err := f.log.AppendExecution(execlog.Lost(s)); err != nil {
			t.Fatal(err)
		}
	}
	v, err := m.Get(context.Background(), bg.ExecutionID, Read{})
	if err != nil || v.Status != StatusLost || v.Tool != "run_script" || !strings.Contains(v.ErrorMessage, "server stopped") {
		t.Errorf("the lost background run: %+v %v", v, err)
	}
	// A run that ended, whose stored result expired: the logged status.
	done := execlog.Entry{ExecutionID: "exec_0000000000cc", Tool: "execute_command", Language: "bash", Status: "success",
		ExecutedAt: at, Background: true}
	if err := f.log.AppendExecution(done); err != nil {
		t.Fatal(err)
	}
	if v, err := m.Get(context.Background(), done.ExecutionID, Read{}); err != nil || v.Status != "success" || !strings.Contains(v.ErrorMessage, "CODEXEC_ARTIFACT_TTL") {
		t.Errorf("an expired run: %+v %v", v, err)
	}
	for _, id := range []string{fg.ExecutionID, "../exec_x", "exec_"} {
		if _, err := m.Get(context.Background(), id, Read{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want not found", id, err)
		}
	}
}

// TestRunExpiresFromList: an ended run leaves the list once it has been
// listed for Keep (the blob store's TTL, which its own clock enforces), for
// every principal, also one that does not come back.
func TestRunExpiresFromList(t *testing.T) {
	f := newFixture(t)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	m := f.manager(t, Options{Keep: time.Hour, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	var done atomic.Int32
	id := start(t, alice, m, f.bash("echo x", &done))
	readAll(t, alice, m, id)
	awaitStored(t, m, id)
	now.Add(int64(2 * time.Hour))
	readAll(t, bob, m, start(t, bob, m, f.bash("echo y", &done)))
	if m.Holds(alice, id) {
		t.Errorf("alice's run is still held two hours after it ended")
	}
	if v, err := m.Get(alice, id, Read{}); err != nil || v.Status != "success" || v.Stdout != "x\n" {
		t.Errorf("from the store: %+v %v", v, err)
	}
}

// TestRunLostWithReplica: a run whose replica stopped (its claim in the
// registry lost) reads as status lost on another replica, naming the
// replica and when, only for its principal; one that had ended there reads
// as logged, saying where its output stayed; Resolve lists both so.
func TestRunLostWithReplica(t *testing.T) {
	f := newFixture(t)
	reg := &sessionreg.Memory{}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	set := func(id string) *replicas.Set {
		return replicas.New(replicas.Options{Self: sessionreg.Replica{ID: id, Addr: "http://" + id}, Registry: reg,
			Lease: 9 * time.Second, Now: func() time.Time { return at }})
	}
	here, gone := set("r-a"), set("r-b")
	m := New(Options{Dir: f.dir}, Deps{Store: f.store, History: f.hist, Claims: here})
	t.Cleanup(m.Close)
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	running, ended := "exec_0000000000dd", "exec_0000000000ee"
	for _, id := range []string{running, ended} {
		if err := gone.Claim(alice, "alice", id, sessionreg.Label{Kind: LabelKind, Name: "execute_code"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.log.AppendExecution(execlog.Entry{ExecutionID: ended, Tool: "execute_code", Language: "bash", Status: "success",
		ExecutedAt: at, Background: true, Owner: "alice"}); err != nil {
		t.Fatal(err)
	}
	gone.Stop()
	v, err := m.Get(alice, running, Read{})
	if err != nil || v.Status != StatusLost || v.Tool != "execute_code" ||
		v.ErrorMessage != "Replica r-b stopped (drained, killed or crashed) at 2026-03-01T12:00:00Z while this ran; its output and exit status are unknown." {
		t.Errorf("the run of a stopped replica: %+v %v", v, err)
	}
	if v, err := m.Get(alice, ended, Read{}); err != nil || v.Status != "success" || !strings.Contains(v.ErrorMessage, "stayed on replica r-b") {
		t.Errorf("a run that ended on the stopped replica: %+v %v", v, err)
	}
	if _, err := m.Get(bob, running, Read{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("bob's get of alice's lost run: %v", err)
	}
	var got []Summary
	for _, id := range []string{running, ended} {
		o, err := here.Record(alice, "alice", id)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Resolve(alice, o))
	}
	want := []Summary{
		{ExecutionID: running, Tool: "execute_code", Status: StatusLost, StartedAt: at, Replica: "r-b", LostAt: &at},
		{ExecutionID: ended, Tool: "execute_code", Status: "success", StartedAt: at, Replica: "r-b"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Resolve (-want +got):\n%s", diff)
	}
}

// TestRunListAll: the operator view lists every principal's runs held
// here, newest first, with their owners, and names a held run's owner.
func TestRunListAll(t *testing.T) {
	f := newFixture(t)
	m := f.manager(t, Options{})
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	var done atomic.Int32
	a := start(t, alice, m, f.bash("sleep 30", &done))
	b := start(t, bob, m, f.bash("sleep 30", &done))
	var got []string
	for _, o := range m.ListAll(10) {
		got = append(got, o.Owner+" "+o.ExecutionID)
	}
	if diff := cmp.Diff([]string{"bob " + b, "alice " + a}, got); diff != "" {
		t.Errorf("ListAll (-want +got)\n%s", diff)
	}
	if n := len(m.ListAll(1)); n != 1 {
		t.Errorf("ListAll(1) lists %d", n)
	}
	for id, want := range map[string]string{a: "alice", b: "bob", "exec_nobody": ""} {
		if owner, ok := m.OwnerOf(id); owner != want || ok != (want != "") {
			t.Errorf("OwnerOf(%s) = %q, %v; want %q", id, owner, ok, want)
		}
	}
	for _, ctx := range []context.Context{alice, bob} {
		if _, err := m.Cancel(ctx, map[context.Context]string{alice: a, bob: b}[ctx], 10*time.Second); err != nil {
			t.Error(err)
		}
	}
}
