package session

import (
	"context"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/driver"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// readySpares waits until lang has n ready spares, each holding at least
// objects bytes when it is a reserve slot, and returns their reserves.
func readySpares(t *testing.T, m *Manager, lang string, n int, objects int64) []driver.Reserve {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, slots, none := m.ck.Spares().Ready(lang)
		done := len(got) == n && none
		for i, r := range got {
			done = done && (!slots[i] || r.Objects >= objects)
		}
		if done {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s spares: %+v, want %d ready", lang, got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSpareReserve: a pause makes the spare fault in memory for the
// checkpoint, the resume restores into it (marshal and pickle values,
// the payload read into the spare's inbox), and a fork of three leaves
// three spares ready, one of them holding a reserve.
func TestSpareReserve(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{Spares: 1})
	ctx := context.Background()
	info, err := m.Start(ctx, StartRequest{Kind: KindSession, Language: "python"})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m, ctx, info.ID, "rows = [{'id': i, 'name': 'n%d' % i} for i in range(20000)]")
	p, err := m.Pause(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := readySpares(t, m, "python", 1, 5*p.Bytes)
	if got[0].Inbox < p.Bytes {
		t.Errorf("spare reserve %+v for a checkpoint of %d bytes", got[0], p.Bytes)
	}
	if _, _, err := m.Resume(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if res := run(t, m, ctx, info.ID, "print(len(rows), rows[-1])"); res.Stdout != "20000 {'id': 19999, 'name': 'n19999'}\n" {
		t.Errorf("after resume: %q", res.Stdout)
	}
	// A value of the session's own class is pickled, not marshalled.
	run(t, m, ctx, info.ID, "class P:\n    def __init__(self, v): self.v = v\nobjs = [P(i) for i in range(20000)]")
	p, err = m.Pause(ctx, info.ID)
	if err != nil {
		t.Fatal(err)
	}
	readySpares(t, m, "python", 1, 5*p.Bytes)
	if _, _, err := m.Resume(ctx, info.ID); err != nil {
		t.Fatal(err)
	}
	if res := run(t, m, ctx, info.ID, "print(len(rows), objs[-1].v, type(objs[0]) is P)"); res.Stdout != "20000 19999 True\n" {
		t.Errorf("after the second resume: %q", res.Stdout)
	}
	fi, err := m.Fork(ctx, info.ID, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range fi.Children {
		if c.Err != nil {
			t.Fatalf("child %d: %v", i, c.Err)
		}
	}
	slots := 0
	for _, r := range readySpares(t, m, "python", 3, 0) {
		if r.Objects > 0 {
			slots++
		}
	}
	if slots != 1 {
		t.Errorf("%d of 3 spares hold a reserve, want 1 (Spares)", slots)
	}
}

// TestTakeSpareWaitsForOneStarting: with the only spare taken, the next
// restore takes its replacement, still starting, rather than none (and so
// does not start an interpreter of its own).
func TestTakeSpareWaitsForOneStarting(t *testing.T) {
	m, _ := ckptManager(t, t.TempDir(), sessionckpt.Options{Spares: 1})
	m.ck.Spares().Want("python")
	readySpares(t, m, "python", 1, 0)
	ctx := context.Background()
	first, ok := m.ck.Spares().Take(ctx, "python", 0)
	if !ok {
		t.Fatal("no ready spare")
	}
	defer m.terminate((*Session)(first))
	second, ok := m.ck.Spares().Take(ctx, "python", 0) // its replacement is starting now
	if !ok || second == first || !(*Session)(second).isSpare() {
		t.Fatalf("the replacement being started was not taken: %v", second)
	}
	defer m.terminate((*Session)(second))
}
