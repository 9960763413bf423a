package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBestSpare(t *testing.T) {
	tests := []struct {
		name     string
		reserves []int64
		need     int64
		want     int
	}{
		{"only one", []int64{0}, 100, 0},
		{"smallest that fits", []int64{500, 0, 200, 300}, 150, 2},
		{"none fits: the largest", []int64{10, 40, 20}, 100, 1},
		{"nothing needed: the smallest", []int64{30, 0, 10}, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ready []*spare
			for _, r := range tt.reserves {
				ready = append(ready, &spare{reserve: reserve{Objects: r}})
			}
			if got := bestSpare(ready, tt.need); got != tt.want {
				t.Errorf("bestSpare(%v, %d) = %d, want %d", tt.reserves, tt.need, got, tt.want)
			}
		})
	}
}

func TestReserveFor(t *testing.T) {
	tests := []struct {
		lang       string
		size, mem  int64
		want       reserve
		whyNoneNot string
	}{
		{"python", 10 << 20, 0, reserve{Objects: 50 << 20, Inbox: 10 << 20}, ""},
		{"python", 10 << 20, 120 << 20, reserve{Objects: 25 << 20, Inbox: 5 << 20}, "a quarter of the memory limit"},
		{"python", 1 << 30, 0, reserve{Objects: (256 << 20) * 5 / 6, Inbox: (256 << 20) / 6}, "256 MiB at most"},
		{"python", 0, 0, reserve{}, "no checkpoint expected"},
		{"node", 10 << 20, 0, reserve{}, "V8 sizes its own heap"},
	}
	for _, tt := range tests {
		m := &Manager{opts: Options{Checkpoints: CheckpointOptions{MemoryLimit: tt.mem}}}
		if diff := cmp.Diff(tt.want, m.reserveFor(tt.lang, tt.size)); diff != "" {
			t.Errorf("reserveFor(%s, %d) with a limit of %d (%s): -want +got\n%s", tt.lang, tt.size, tt.mem, tt.whyNoneNot, diff)
		}
	}
}

// readySpares waits until lang has n ready spares, each holding at least
// objects bytes when it is a reserve slot, and returns their reserves.
func readySpares(t *testing.T, m *Manager, lang string, n int, objects int64) []reserve {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sp := &m.spares
		sp.mu.Lock()
		var got []reserve
		done := len(sp.ready[lang]) == n && sp.starting[lang] == 0
		for _, e := range sp.ready[lang] {
			got = append(got, e.reserve)
			done = done && (!e.slot || e.reserve.Objects >= objects)
		}
		sp.mu.Unlock()
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
	m, _ := ckptManager(t, t.TempDir(), CheckpointOptions{Spares: 1})
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
	m, _ := ckptManager(t, t.TempDir(), CheckpointOptions{Spares: 1})
	m.wantSpare("python")
	readySpares(t, m, "python", 1, 0)
	ctx := context.Background()
	first := m.takeSpare(ctx, "python", 0)
	if first == nil {
		t.Fatal("no ready spare")
	}
	defer m.terminate(first)
	second := m.takeSpare(ctx, "python", 0) // its replacement is starting now
	if second == nil || second == first || !second.isSpare() {
		t.Fatalf("the replacement being started was not taken: %v", second)
	}
	defer m.terminate(second)
}
