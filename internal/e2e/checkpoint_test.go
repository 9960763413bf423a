package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// resumedOut is the resumed report of resume_session, fork_session and the
// first result after a transparent resume.
type resumedOut struct {
	AgeS      float64           `json:"age_s"`
	Auto      bool              `json:"auto"`
	Values    []string          `json:"values"`
	Defs      []string          `json:"defs"`
	Modules   []string          `json:"modules"`
	Lost      map[string]string `json:"lost"`
	Files     int               `json:"files"`
	FilesLost map[string]string `json:"files_lost"`
	Notes     []string          `json:"notes"`
}

type pauseOut struct {
	SessionID       string            `json:"session_id"`
	Status          string            `json:"status"`
	CheckpointBytes int64             `json:"checkpoint_bytes"`
	Lost            map[string]string `json:"lost"`
}

type resumeOut struct {
	SessionID string      `json:"session_id"`
	Status    string      `json:"status"`
	Resumed   *resumedOut `json:"resumed"`
}

type forkOut struct {
	Children []struct {
		SessionID string `json:"session_id"`
		Error     string `json:"error"`
	} `json:"children"`
	Resumed *resumedOut `json:"resumed"`
}

type sessionListOut struct {
	Sessions []struct {
		SessionID       string `json:"session_id"`
		Kind            string `json:"kind"`
		Status          string `json:"status"`
		Name            string `json:"name"`
		Pid             int    `json:"pid"`
		CheckpointBytes int64  `json:"checkpoint_bytes"`
	} `json:"sessions"`
}

// startData starts a server on data dir data (a restart when a server ran
// on it before).
func startData(t *testing.T, data string, env ...string) *server {
	t.Helper()
	s := startWith(t, "", nil, append([]string{"CODEXEC_DATA_DIR=" + data}, env...)...)
	s.DataDir = data
	return s
}

// stop ends s gracefully, as a client leaving does (stdin closes; the
// server pauses its sessions on the way out); closing the client session
// waits for the server to exit.
func (s *server) stop() {
	s.t.Helper()
	_ = s.Session.Close()
}

// sendOK runs code in a session and returns the result with its resumed
// report; anything but success fails the test.
func (s *server) sendOK(id, code string) (execResult, *resumedOut) {
	s.t.Helper()
	var r struct {
		execResult
		Resumed *resumedOut `json:"resumed"`
	}
	res := s.callInto("send_to_session", map[string]any{"session_id": id, "code": code}, &r)
	if res.IsError || r.Status != "success" {
		s.t.Fatalf("send_to_session %q: %+v %s", code, r.execResult, text(res))
	}
	return r.execResult, r.Resumed
}

func (s *server) list() sessionListOut {
	s.t.Helper()
	var l sessionListOut
	s.callInto("list_sessions", map[string]any{}, &l)
	return l
}

func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

const checkpointState = `
import json as j
from os.path import join
total = 40
rows = [{"id": i, "name": "r%d" % i} for i in range(100)]
def add(a, b):
    return a + b
class Box:
    def __init__(self, v):
        self.v = v
box = Box(2)
open("notes.txt", "w").write("kept in the workspace")
fh = open("notes.txt")
`

// TestPauseRestartResume: a python session is paused (its process gone),
// the server restarts on the same data dir, and the session resumes with
// its variables, a function, a class instance, imported modules and a
// workspace file; the open file handle is reported lost by name.
func TestPauseRestartResume(t *testing.T) {
	data := t.TempDir()
	s1 := startData(t, data)
	sess := s1.startSession("python")
	s1.sendOK(sess.SessionID, checkpointState)
	var p pauseOut
	if res := s1.callInto("pause_session", map[string]any{"session_id": sess.SessionID}, &p); res.IsError {
		t.Fatalf("pause_session: %s", text(res))
	}
	if p.Status != "paused" || p.CheckpointBytes == 0 || p.Lost["fh"] != "open file" {
		t.Fatalf("pause_session: %+v", p)
	}
	if !processGone(sess.Pid) {
		t.Errorf("the paused session's process %d is still running", sess.Pid)
	}
	if _, err := os.Stat(filepath.Join(data, "sandbox", sess.SessionID)); !os.IsNotExist(err) {
		t.Errorf("the paused session's workspace is still there: %v", err)
	}
	l := s1.list()
	if len(l.Sessions) != 1 || l.Sessions[0].Status != "paused" || l.Sessions[0].Pid != 0 {
		t.Fatalf("list_sessions after pause: %+v", l)
	}
	s1.stop()

	s2 := startData(t, data)
	if l := s2.list(); len(l.Sessions) != 1 || l.Sessions[0].Status != "paused" || l.Sessions[0].SessionID != sess.SessionID {
		t.Fatalf("list_sessions after restart: %+v", l)
	}
	var r resumeOut
	if res := s2.callInto("resume_session", map[string]any{"session_id": sess.SessionID}, &r); res.IsError || r.Resumed == nil {
		t.Fatalf("resume_session: %s", text(res))
	}
	got := r.Resumed
	if strings.Join(got.Values, ",") != "box,rows,total" || strings.Join(got.Defs, ",") != "Box,add" ||
		strings.Join(got.Modules, ",") != "j,join" || got.Files != 1 || got.Lost["fh"] != "open file" || len(got.Lost) != 1 || got.Auto {
		t.Errorf("resume report %+v", got)
	}
	out, _ := s2.sendOK(sess.SessionID, `print(add(total, box.v), len(rows), rows[7]["name"], j.dumps(join("a", "b")), open("notes.txt").read())`)
	if out.Stdout != "42 100 r7 \"a/b\" kept in the workspace\n" {
		t.Errorf("state after resume: %q", out.Stdout)
	}
}

// TestForkSessionDiverges: three children of one session start from its
// state and workspace, then each goes its own way; random is reseeded in
// each; the parent is untouched; a session holding a value named like a
// secret forks only with allow_secrets.
func TestForkSessionDiverges(t *testing.T) {
	s := start(t, "CODEXEC_MAX_SESSIONS=8")
	parent := s.startSession("python")
	s.sendOK(parent.SessionID, "import random\nrandom.seed(7)\nitems = ['p']\nopen('log.txt', 'w').write('parent')")
	var f forkOut
	if res := s.callInto("fork_session", map[string]any{"session_id": parent.SessionID, "count": 3}, &f); res.IsError || len(f.Children) != 3 {
		t.Fatalf("fork_session: %s", text(res))
	}
	if f.Resumed == nil || !strings.Contains(strings.Join(f.Resumed.Notes, ";"), "reseeded") || strings.Join(f.Resumed.Values, ",") != "items" {
		t.Errorf("fork report: %+v", f.Resumed)
	}
	outs := map[string]bool{}
	for i, c := range f.Children {
		if c.Error != "" || c.SessionID == "" || c.SessionID == parent.SessionID {
			t.Fatalf("child %d: %+v", i, c)
		}
		code := "items.append('c%d')\nopen('log.txt', 'a').write('+c%d')\nprint(items, open('log.txt').read(), random.random())"
		out, _ := s.sendOK(c.SessionID, strings.ReplaceAll(code, "%d", string(rune('0'+i))))
		want := "['p', 'c" + string(rune('0'+i)) + "'] parent+c" + string(rune('0'+i)) + " "
		if !strings.HasPrefix(out.Stdout, want) {
			t.Errorf("child %d: %q, want prefix %q", i, out.Stdout, want)
		}
		rnd := strings.Fields(out.Stdout)
		if outs[rnd[len(rnd)-1]] {
			t.Errorf("child %d draws the same random number as another: not reseeded", i)
		}
		outs[rnd[len(rnd)-1]] = true
	}
	out, _ := s.sendOK(parent.SessionID, "print(items, open('log.txt').read())")
	if out.Stdout != "['p'] parent\n" {
		t.Errorf("parent after the children ran: %q", out.Stdout)
	}
	s.sendOK(parent.SessionID, "db_password = 'hunter2'")
	res := s.call("fork_session", map[string]any{"session_id": parent.SessionID, "count": 1})
	if !res.IsError || !strings.Contains(text(res), "NOT_ALLOWED") || !strings.Contains(text(res), "db_password") {
		t.Errorf("fork of a session holding db_password without allow_secrets: %s", text(res))
	}
	if res := s.callInto("fork_session", map[string]any{"session_id": parent.SessionID, "count": 1, "allow_secrets": true}, &f); res.IsError || f.Children[0].Error != "" {
		t.Errorf("fork with allow_secrets: %s", text(res))
	}
}

// TestCheckpointAfterKill9: a session checkpointed automatically after a
// quiet period survives kill -9 of its server; its next call resumes it
// from that checkpoint and says how old it is.
func TestCheckpointAfterKill9(t *testing.T) {
	data := t.TempDir()
	env := []string{"CODEXEC_CHECKPOINT_AUTO=300ms"}
	s1 := startData(t, data, env...)
	sess := s1.startSession("python")
	s1.sendOK(sess.SessionID, "counter = 41\ndef bump():\n    global counter\n    counter += 1\n    return counter\n")
	waitFile(t, filepath.Join(data, "checkpoint-records", sess.SessionID+".json"))
	time.Sleep(500 * time.Millisecond)            // the checkpoint ages
	if err := s1.Cmd.Process.Kill(); err != nil { // SIGKILL of the server we started
		t.Fatal(err)
	}
	_ = s1.Session.Close() // reaps the killed process

	s2 := startData(t, data, env...)
	out, r := s2.sendOK(sess.SessionID, "print(bump())")
	if out.Stdout != "42\n" {
		t.Errorf("after kill -9: %q", out.Stdout)
	}
	if r == nil || !r.Auto || r.AgeS < 0.4 || strings.Join(r.Defs, ",") != "bump" {
		t.Errorf("resume report after kill -9: %+v", r)
	}
}

// TestPauseWhenIdle: the default idle action pauses a session (its process
// ends); its next call resumes it with its state.
func TestPauseWhenIdle(t *testing.T) {
	s := start(t, "CODEXEC_SESSION_IDLE_TIMEOUT_MS=400")
	sess := s.startSession("python")
	s.sendOK(sess.SessionID, "kept = 'yes'")
	deadline := time.Now().Add(20 * time.Second)
	for l := s.list(); len(l.Sessions) != 1 || l.Sessions[0].Status != "paused"; l = s.list() {
		if time.Now().After(deadline) {
			t.Fatalf("idle session not paused: %+v", l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !processGone(sess.Pid) {
		t.Errorf("the idle session's process %d still runs", sess.Pid)
	}
	out, r := s.sendOK(sess.SessionID, "print(kept)")
	if out.Stdout != "yes\n" || r == nil || strings.Join(r.Values, ",") != "kept" {
		t.Errorf("after idle pause: %q %+v", out.Stdout, r)
	}
}

// TestResumeContextAfterRestart: a context is a session too: a graceful
// restart pauses it and run_code (by name) resumes it.
func TestResumeContextAfterRestart(t *testing.T) {
	data := t.TempDir()
	s1 := startData(t, data)
	s1.createContext(map[string]any{"name": "analysis", "language": "javascript"})
	if r := s1.runCode("analysis", "let seen = [1, 2]; function more(x) { return seen.concat([x]); }"); !r.Success {
		t.Fatalf("run_code: %+v", r)
	}
	s1.stop()
	s2 := startData(t, data)
	r := s2.runCode("analysis", "console.log(JSON.stringify(more(3)))")
	if !r.Success || r.Stdout != "[1,2,3]\n" {
		t.Errorf("run_code after restart: %+v", r)
	}
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ents, _ := os.ReadDir(filepath.Dir(path))
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			t.Fatalf("%s did not appear (dir has %v)", path, names)
		}
	}
}
