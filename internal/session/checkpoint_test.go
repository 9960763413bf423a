package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/engine"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/sessionckpt"
	"github.com/codexec/codexec/internal/tenant"
)

// ckptManager is a Manager with checkpoints under dir; two of them on one
// dir are a server and the next one after a restart.
func ckptManager(tb testing.TB, dir string, o sessionckpt.Options) (*Manager, *files.DirStore) {
	tb.Helper()
	eng, langs, log, opts := testEngine(tb, dir)
	store, err := files.NewDirStore(filepath.Join(dir, "checkpoints"), files.DirOptions{TTL: time.Hour, MaxBytes: 1 << 30})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(store.Close)
	if o.Dir == "" {
		o.Dir = filepath.Join(dir, "sessions")
	}
	m := NewManager(Deps{Engine: eng, Languages: langs, Log: log, Checkpoints: store}, Options{MaxSessions: 20,
		DefaultTimeout: opts.DefaultTimeout, Output: opts.Output, PackagesDir: filepath.Join(opts.SandboxDir, ".packages"),
		SandboxMode: "subprocess", KillGrace: time.Second, Checkpoints: o})
	tb.Cleanup(m.Close)
	return m, store
}

// run runs code in session id and fails the test unless it succeeds.
func run(tb testing.TB, m *Manager, ctx context.Context, id, code string) engine.Result {
	tb.Helper()
	res, err := m.Exec(ctx, ExecRequest{Session: id, Code: code})
	if err != nil {
		tb.Fatalf("exec %q: %v", code, err)
	}
	if !res.Success {
		tb.Fatalf("exec %q: %s %s %v", code, res.Status, res.Stderr, res.ErrorMessage)
	}
	return res
}

const pythonState = `
import json as j
from os.path import join
import random
x = [1, 2, {"a": "b"}]
y = x
def f(n):
    return n * 2 + len(x)
class Counter:
    def __init__(self, v):
        self.v = v
    def bump(self):
        self.v += 1
        return self.v
c = Counter(41)
sq = lambda q: q * q
fh = open("note.txt", "w")
fh.write("kept")
fh.flush()
`

func TestPauseResumePython(t *testing.T) {
	dir := t.TempDir()
	m, _ := ckptManager(t, dir, sessionckpt.Options{})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, pythonState)
	pid := m.List(ctx)[0].Pid
	p, err := m.Pause(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Report.Lost["fh"] != "open file" || p.Report.Files != 1 {
		t.Errorf("pause report %+v", p.Report)
	}
	if l := m.List(ctx); len(l) != 1 || l[0].Status != sessionckpt.StatusPaused || l[0].Pid != 0 || l[0].CheckpointBytes == 0 {
		t.Fatalf("list after pause: %+v", l)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the paused session's interpreter (pid %d) is still there: %v", pid, err)
	}
	res := run(t, m, ctx, info.ID, `print(x, y is x, f(2), c.bump(), sq(3), join("a", "b"), j.dumps(1), open("note.txt").read())`)
	if want := "[1, 2, {'a': 'b'}] True 7 42 9 a/b 1 kept\n"; res.Stdout != want {
		t.Errorf("after resume: %q, want %q", res.Stdout, want)
	}
	r, ok := res.Resumed.(*sessionckpt.Resumed)
	if !ok {
		t.Fatalf("no resume report in the first result: %#v", res.Resumed)
	}
	want := checkpoint.Report{Values: []string{"c", "x", "y"}, Defs: []string{"Counter", "f", "sq"}, Modules: []string{"j", "join", "random"},
		Lost: map[string]string{"fh": "open file"}, Files: 1}
	if d := cmp.Diff(want, r.Report); d != "" {
		t.Errorf("resume report (-want +got):\n%s", d)
	}
	if res2 := run(t, m, ctx, info.ID, "1"); res2.Resumed != nil {
		t.Errorf("second result repeats the report: %+v", res2.Resumed)
	}
}

func TestPausedSessionSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	sealer, err := checkpoint.NewSealer([]byte(strings.Repeat("s", 32)))
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := ckptManager(t, dir, sessionckpt.Options{Sealer: sealer})
	ctx := context.Background()
	info, err := m1.Start(ctx, StartRequest{Kind: KindContext, Language: "python", Name: "ctx1"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m1, ctx, info.ID, "total = 40\ndef add(a, b):\n    return a + b\n")
	m1.Close() // a graceful shutdown pauses it
	m2, _ := ckptManager(t, dir, sessionckpt.Options{Sealer: sealer})
	l := m2.List(ctx)
	if len(l) != 1 || l[0].Status != sessionckpt.StatusPaused || l[0].Kind != KindContext || l[0].Name != "ctx1" {
		t.Fatalf("after restart: %+v", l)
	}
	res := run(t, m2, ctx, "ctx1", "print(add(total, 2))")
	if res.Stdout != "42\n" {
		t.Errorf("got %q", res.Stdout)
	}
	// Another principal sees nothing of it.
	other := tenant.With(ctx, "mallory")
	if _, err := m2.Get(other, info.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another principal's Get: %v", err)
	}
	if _, err := m2.Pause(other, info.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("another principal's Pause: %v", err)
	}
	if _, err := m2.Fork(other, info.ID, 1, true); !errors.Is(err, ErrNotFound) {
		t.Errorf("another principal's Fork: %v", err)
	}
}

func TestTamperedSealedCheckpointIsRefused(t *testing.T) {
	dir := t.TempDir()
	sealer, _ := checkpoint.NewSealer([]byte(strings.Repeat("k", 32)))
	m, _ := ckptManager(t, dir, sessionckpt.Options{Sealer: sealer})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "v = 1")
	if _, err := m.Pause(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	blobs, _ := filepath.Glob(filepath.Join(dir, "checkpoints", "*", "files", "checkpoint"))
	if len(blobs) != 1 {
		t.Fatalf("blobs: %v", blobs)
	}
	b, _ := os.ReadFile(blobs[0])
	b[len(b)-1] ^= 1
	if err := os.WriteFile(blobs[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.Resume(ctx, info.ID); !errors.Is(err, checkpoint.ErrCorrupt) {
		t.Fatalf("resume of an altered checkpoint: %v", err)
	}
}

func TestForkPython(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{Spares: 1})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "import random\nrandom.seed(1)\nrng = random.Random(2)\nitems = [1]\nopen('data.txt', 'w').write('parent')")
	api_key := "api_key = 'x'"
	run(t, m, ctx, info.ID, api_key)
	var se *sessionckpt.ErrSecrets
	if _, err := m.Fork(ctx, info.ID, 3, false); !errors.As(err, &se) || se.Names[0] != "api_key" {
		t.Fatalf("fork of a session holding api_key: %v", err)
	}
	fi, err := m.Fork(ctx, info.ID, 3, true)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range fi.Children {
		if c.Err != nil {
			t.Fatalf("child %d: %v", i, c.Err)
		}
		res := run(t, m, ctx, c.ID, "items.append(len(items)); open('data.txt', 'a').write('+'); print(random.random(), rng.random(), open('data.txt').read(), items)")
		if seen[res.Stdout] {
			t.Errorf("two children print the same (random not reseeded?): %q", res.Stdout)
		}
		seen[res.Stdout] = true
		if !strings.HasSuffix(res.Stdout, "parent+ [1, 1]\n") {
			t.Errorf("child %d: %q", i, res.Stdout)
		}
	}
	if fi.Resumed == nil || len(fi.Resumed.Notes) == 0 || !strings.Contains(strings.Join(fi.Resumed.Notes, ";"), "reseeded") {
		t.Errorf("fork report: %+v", fi.Resumed)
	}
	res := run(t, m, ctx, info.ID, "print(items, open('data.txt').read())")
	if res.Stdout != "[1] parent\n" {
		t.Errorf("parent after fork: %q", res.Stdout)
	}
}

func TestPauseResumeNode(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "node"})
	if err != nil {
		if strings.Contains(err.Error(), "unavailable") {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, `const path = require('path'); let n = 41; const m = new Map([[1, 'one']]);
function inc(v) { return v + 1; } class P { constructor(v) { this.v = v; } get() { return this.v; } }
let p = new P(7); const timer = setInterval(() => {}, 1e6);`)
	if _, err := m.Pause(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	res := run(t, m, ctx, info.ID, `console.log(inc(n), m.get(1), p.get(), path.join('a', 'b'), typeof timer)`)
	if res.Stdout != "42 one 7 a/b undefined\n" {
		t.Errorf("after resume: %q", res.Stdout)
	}
	r := res.Resumed.(*sessionckpt.Resumed)
	if r.Lost["timer"] == "" || len(r.Values) != 3 {
		t.Errorf("report %+v", r.Report)
	}
}

func TestAutomaticCheckpoint(t *testing.T) {
	dir := t.TempDir()
	m, _ := ckptManager(t, dir, sessionckpt.Options{Auto: 50 * time.Millisecond})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "a = 1")
	rec := waitRecord(t, m, info.ID)
	if !rec.Auto || rec.Report.Values[0] != "a" {
		t.Fatalf("automatic checkpoint record %+v", rec)
	}
	time.Sleep(200 * time.Millisecond)
	if again := waitRecord(t, m, info.ID); again.Blob != rec.Blob {
		t.Errorf("an unchanged session was checkpointed again")
	}
	run(t, m, ctx, info.ID, "a = 2")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := waitRecord(t, m, info.ID); r.Blob != rec.Blob {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no new automatic checkpoint after a run")
		}
	}
}

// waitRecord waits for session id's record on disk.
func waitRecord(t *testing.T, m *Manager, id string) checkpoint.Record {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		s, _, err := m.lookup(context.Background(), id)
		if err == nil && s != nil {
			if r := s.ck.Current(); r != nil {
				return *r
			}
		}
	}
	t.Fatal("no checkpoint record")
	return checkpoint.Record{}
}

func TestIdlePausesAndClosePausedRemovesCheckpoint(t *testing.T) {
	dir := t.TempDir()
	m, store := ckptManager(t, dir, sessionckpt.Options{})
	m.opts.IdleTimeout = 100 * time.Millisecond
	go m.reapIdle()
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "z = 3")
	for deadline := time.Now().Add(10 * time.Second); m.List(ctx)[0].Status != sessionckpt.StatusPaused; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("idle session not paused")
		}
	}
	if len(store.List(ctx)) != 1 {
		t.Fatalf("checkpoints: %+v", store.List(ctx))
	}
	if _, err := m.Stop(ctx, info.ID, "closed", false); err != nil {
		t.Fatal(err)
	}
	if len(m.List(ctx)) != 0 || len(store.List(ctx)) != 0 {
		t.Errorf("after close: sessions %+v, checkpoints %+v", m.List(ctx), store.List(ctx))
	}
	if recs, _ := filepath.Glob(filepath.Join(dir, "sessions", "*.json")); len(recs) != 0 {
		t.Errorf("records left: %v", recs)
	}
}

// TestCheckpointKeepsTypesAndSharing: plain data (carried by marshal) and
// data with a bytearray or a subclass (carried by pickle) come back with
// their exact types and with objects shared between names still shared.
func TestCheckpointKeepsTypesAndSharing(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{})
	ctx := context.Background()
	check := `print(b is a, s["x"] is a, r[0] is r, type(big).__name__, big, nan != nan, type(fs).__name__, t[1][0], type(ba).__name__, type(od).__name__)`
	for name, extra := range map[string]string{
		"plain":     "ba = b'raw'\nod = {}",
		"bytearray": "ba = bytearray(b'raw')\nod = {}",
		"subclass":  "import collections\nba = b'raw'\nod = collections.OrderedDict(a=1)",
	} {
		t.Run(name, func(t *testing.T) {
			info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
			if err != nil {
				t.Fatal(err)
			}
			run(t, m, ctx, info.ID, "a = [1, 2]\nb = a\ns = {'x': a}\nr = []\nr.append(r)\nbig = 10**40\nnan = float('nan')\nfs = frozenset({1})\nt = (1, ('deep',))\n"+extra)
			before := run(t, m, ctx, info.ID, check).Stdout
			if _, err := m.Pause(ctx, info.ID); err != nil {
				t.Fatal(err)
			}
			if after := run(t, m, ctx, info.ID, check).Stdout; after != before {
				t.Errorf("after resume %q, before %q", after, before)
			}
		})
	}
}

// TestResumeDeadSessionFromAutomaticCheckpoint: an interpreter that died
// on its own is restored from its latest automatic checkpoint.
func TestResumeDeadSessionFromAutomaticCheckpoint(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{Auto: 30 * time.Millisecond})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "saved = 'before'")
	waitRecord(t, m, info.ID)
	res, _ := m.Exec(ctx, ExecRequest{Session: info.ID, Code: "saved = 'after'\nimport os\nos._exit(3)"})
	if res.Success || res.ErrorMessage == nil || !strings.Contains(*res.ErrorMessage, "resumes it from that checkpoint") {
		t.Fatalf("death during a run: %+v", res)
	}
	if l := m.List(ctx); len(l) != 1 || l[0].Status != sessionckpt.StatusPaused {
		t.Fatalf("after the death: %+v", l)
	}
	out := run(t, m, ctx, info.ID, "print(saved)")
	r, _ := out.Resumed.(*sessionckpt.Resumed)
	if out.Stdout != "before\n" || r == nil || !r.Auto {
		t.Errorf("after resume: %q %+v", out.Stdout, r)
	}
	// A death between runs leaves the session dead, resumable on demand.
	waitRecord(t, m, info.ID)
	s, _, _ := m.lookup(ctx, info.ID)
	s.kill()
	if _, err := m.Exec(ctx, ExecRequest{Session: info.ID, Code: "1"}); err == nil || !strings.Contains(err.Error(), "resume_session") {
		t.Fatalf("exec in the dead session: %v", err)
	}
	if _, r, err := m.Resume(ctx, info.ID); err != nil || r == nil || !r.Auto {
		t.Fatalf("resume of the dead session: %v %+v", err, r)
	}
	if out := run(t, m, ctx, info.ID, "print(saved)"); out.Stdout != "before\n" {
		t.Errorf("after resume: %q", out.Stdout)
	}
}
