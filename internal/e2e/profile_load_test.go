package e2e

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestProfileLoad is a load generator for kernel profiling, not a test: with
// CODEXEC_PROFILE_SECONDS=N it keeps 8 one-shot python runs (or, with
// CODEXEC_PROFILE_BARE=1, 8 bare `python3 -c` spawns) in flight for N
// seconds, writing the run count so far to
// CODEXEC_PROFILE_READY.n every 100 ms, so `perf record -a` can be attached to
// the steady state. CODEXEC_PROFILE_ENV adds space-separated settings to the
// server's environment. docs/performance.md says how it is used.
func TestProfileLoad(t *testing.T) {
	secs, _ := strconv.Atoi(os.Getenv("CODEXEC_PROFILE_SECONDS"))
	if secs <= 0 {
		t.Skip("set CODEXEC_PROFILE_SECONDS to generate load")
	}
	bare := os.Getenv("CODEXEC_PROFILE_BARE") == "1"
	var run func()
	if bare {
		run = func() { _ = exec.Command("/usr/bin/python3", "-c", "print(1)").Run() }
	} else {
		s := start(t, strings.Fields(os.Getenv("CODEXEC_PROFILE_ENV"))...)
		t.Logf("sandbox mode %s", s.sandboxMode(s.exec1("python", "print(1)").ExecutionID))
		run = func() { s.exec1("python", "print(1)") }
	}
	for i := 0; i < 8; i++ { // warm-up
		run()
	}
	var mu sync.Mutex
	n := 0
	end := time.Now().Add(time.Duration(secs) * time.Second)
	b0, t0 := busyMs(), time.Now()
	os.WriteFile(os.Getenv("CODEXEC_PROFILE_READY"), []byte("1"), 0o644)
	stop := make(chan struct{})
	go func() { // the run count so far, for a profiler's window
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				mu.Lock()
				c := n
				mu.Unlock()
				os.WriteFile(os.Getenv("CODEXEC_PROFILE_READY")+".n", []byte(strconv.Itoa(c)), 0o644)
			}
		}
	}()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				run()
				mu.Lock()
				n++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	el := time.Since(t0).Seconds()
	t.Logf("LOAD runs %d in %.2f s: %.1f runs/s, machine busy CPU %.1f ms/run", n, el, float64(n)/el, (busyMs()-b0)/float64(n))
}
