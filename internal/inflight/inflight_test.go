package inflight

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codexec/codexec/internal/instance"
)

// deadName is the name of a process that has exited.
func deadName(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	name := instance.Of(cmd.Process.Pid)
	_ = cmd.Wait()
	return name
}

// asDead renames this server's journal in dir to dead's, as if the server
// writing it had been killed.
func asDead(t *testing.T, dir, dead string) {
	t.Helper()
	if err := os.Rename(filepath.Join(dir, instance.Self()+fileExt), filepath.Join(dir, dead+fileExt)); err != nil {
		t.Fatal(err)
	}
}

type started struct {
	ID   string `json:"id"`
	Code string `json:"code"`
}

func TestLeftovers(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j.SessionStarted(Session{ID: "sess_a", Owner: "alice", LogFile: "session-sess_a.jsonl", StartedAt: t0})
	j.SessionStarted(Session{ID: "sess_b", LogFile: "session-sess_b.jsonl", StartedAt: t0})
	j.RunStarted("exec_1", "", started{"exec_1", "print(1)"})
	j.RunStarted("exec_2", "session-sess_a.jsonl", started{"exec_2", "print(2)"})
	j.RunStarted("exec_3", "session-sess_a.jsonl", started{"exec_3", "print(3)"})
	j.RunEnded("exec_2", "session-sess_a.jsonl")
	j.SessionEnded("session-sess_b.jsonl")
	j.DirCreated("/w/exec_1")
	j.DirCreated("/w/exec_9")
	j.DirRemoved("/w/exec_9")
	dead := deadName(t)
	asDead(t, dir, dead)
	// A torn last line, as a kill in the middle of a write leaves.
	f, _ := os.OpenFile(filepath.Join(dir, dead+fileExt), os.O_WRONLY|os.O_APPEND, 0)
	_, _ = f.WriteString(`{"op":"done","id":"exe`)
	_ = f.Close()
	// A live server's journal is not a leftover.
	live, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	live.RunStarted("exec_live", "", started{"exec_live", ""})
	_ = os.Rename(live.path, filepath.Join(dir, filepath.Base(live.path)))

	got, err := Leftovers(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []Leftover{{
		Server: dead,
		Runs: []Run{{Started: json.RawMessage(`{"id":"exec_1","code":"print(1)"}`)},
			{Started: json.RawMessage(`{"id":"exec_3","code":"print(3)"}`), Session: "session-sess_a.jsonl"}},
		Sessions: []Session{{ID: "sess_a", Owner: "alice", LogFile: "session-sess_a.jsonl", StartedAt: t0, Executions: 1}},
		Dirs:     []string{"/w/exec_1"},
	}}
	if d := cmp.Diff(want, got, cmpopts.IgnoreUnexported(Leftover{})); d != "" {
		t.Fatalf("leftovers (-want +got):\n%s", d)
	}
	if err := got[0].Remove(); err != nil {
		t.Fatal(err)
	}
	if again, _ := Leftovers(dir); len(again) != 0 {
		t.Errorf("leftovers after Remove: %+v", again)
	}
	if _, err := os.Stat(filepath.Join(dir, instance.Self()+fileExt)); err != nil {
		t.Errorf("the live server's journal was touched: %v", err)
	}
	if OthersAlive(dir) {
		t.Errorf("OthersAlive with only this server's journal and a dead one's")
	}
	// A live process other than this one, as another server.
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if err := os.WriteFile(filepath.Join(dir, instance.Of(other.Process.Pid)+fileExt), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !OthersAlive(dir) {
		t.Errorf("OthersAlive missed another live server's journal")
	}
}

func TestCloseRemovesJournal(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.RunStarted("exec_1", "", started{"exec_1", ""})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j.RunEnded("exec_1", "") // after Close: dropped, no error
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("journal left after a clean shutdown: %v", ents)
	}
	var none *Journal
	none.RunStarted("x", "", nil) // a nil journal records nothing
	if err := none.Close(); err != nil {
		t.Error(err)
	}
}

// TestCompaction checks that a journal of many ended runs shrinks to its
// open items and still replays to them.
func TestCompaction(t *testing.T) {
	dir := t.TempDir()
	j, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	j.RunStarted("exec_open", "", started{"exec_open", "keep"})
	code := strings.Repeat("x", 1000)
	for i := range 3000 {
		id := "exec_" + string(rune('a'+i%26)) + time.Duration(i).String()
		j.RunStarted(id, "", started{id, code})
		j.RunEnded(id, "")
	}
	fi, err := os.Stat(j.path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > compactAt {
		t.Errorf("journal is %d bytes after 3000 ended runs; want it compacted below %d", fi.Size(), compactAt)
	}
	asDead(t, dir, deadName(t))
	got, err := Leftovers(dir)
	if err != nil || len(got) != 1 || len(got[0].Runs) != 1 || !strings.Contains(string(got[0].Runs[0].Started), "exec_open") {
		t.Fatalf("leftovers after compaction: %+v %v", got, err)
	}
}
