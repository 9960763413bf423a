package warm

import (
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/proc"
)

func TestQuietGate(t *testing.T) {
	g := newQuietGate()
	waited := func() time.Duration {
		t0 := time.Now()
		g.wait(time.Second, nil)
		return time.Since(t0)
	}
	if d := waited(); d > 100*time.Millisecond {
		t.Fatalf("idle gate waited %v", d)
	}
	g.begin()
	g.begin()
	go func() {
		time.Sleep(50 * time.Millisecond)
		g.end()
		time.Sleep(50 * time.Millisecond)
		g.end()
	}()
	if d := waited(); d < 90*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("gate with two runs ending after 50+50 ms waited %v", d)
	}
	g.begin()
	t0 := time.Now()
	g.wait(30*time.Millisecond, nil)
	if d := time.Since(t0); d < 30*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("busy gate with a 30 ms limit waited %v", d)
	}
	stop := make(chan struct{})
	close(stop)
	t0 = time.Now()
	g.wait(time.Second, stop)
	if d := time.Since(t0); d > 500*time.Millisecond {
		t.Fatalf("stopped gate waited %v", d)
	}
}

func TestCountedProcEndsOnce(t *testing.T) {
	g := newQuietGate()
	g.begin()
	ends := 0
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	hp, err := proc.Start(cmd, nil, nil, nil, proc.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = hp.Wait()
	p := &countedProc{Process: hp, end: func() { ends++; g.end() }}
	_ = p.Release(time.Millisecond)
	_ = p.Release(time.Millisecond)
	if ends != 1 {
		t.Fatalf("end called %d times, want 1", ends)
	}
}

// TestQuietGateSettle: settle waits until no run has been in flight for
// its quiet time, across short gaps between runs, and at most its limit.
func TestQuietGateSettle(t *testing.T) {
	g := newQuietGate()
	time.Sleep(30 * time.Millisecond)
	t0 := time.Now()
	g.settle(20*time.Millisecond, time.Second, nil)
	if d := time.Since(t0); d > 15*time.Millisecond {
		t.Fatalf("gate quiet for 30 ms waited %v", d)
	}
	started := make(chan struct{})
	go func() { // five runs of 10 ms with 1 ms gaps
		for i := range 5 {
			g.begin()
			if i == 0 {
				close(started) // settle must see the burst, however late this goroutine ran
			}
			time.Sleep(10 * time.Millisecond)
			g.end()
			time.Sleep(time.Millisecond)
		}
	}()
	<-started
	t0 = time.Now()
	g.settle(20*time.Millisecond, time.Second, nil)
	if d := time.Since(t0); d < 60*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("gate across a 55 ms burst waited %v, want the rest of the burst and 20 ms", d)
	}
	g.begin()
	defer g.end()
	t0 = time.Now()
	g.settle(20*time.Millisecond, 30*time.Millisecond, nil)
	if d := time.Since(t0); d < 30*time.Millisecond || d > 900*time.Millisecond {
		t.Fatalf("busy gate with a 30 ms limit waited %v", d)
	}
}
