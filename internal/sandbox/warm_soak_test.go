package sandbox

import (
	"fmt"
	"github.com/codexec/codexec/internal/proc"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWarmSoak runs many pooled runs at concurrency 4, then closes the
// backend and checks nothing is left: processes, cgroups, staging mounts,
// descriptors. 200 runs by default (50 with -short), so the whole suite stays
// light on a shared machine; the proof run is CODEXEC_SOAK_RUNS=2000. It runs
// with python runners started whole and forked from a zygote.
func TestWarmSoak(t *testing.T) {
	for _, fork := range []bool{false, true} {
		t.Run(map[bool]string{false: "runner", true: "fork"}[fork], func(t *testing.T) { soak(t, fork) })
	}
}

func soak(t *testing.T, fork bool) {
	runs := 200
	if testing.Short() {
		runs = 50
	}
	if n, err := strconv.Atoi(os.Getenv("CODEXEC_SOAK_RUNS")); err == nil && n > 0 {
		runs = n
	}
	fdsBefore := countFDs(t)
	n := newPoolNamespace(t, PoolOptions{Size: 4, Idle: time.Minute, Fork: fork})
	if fork && !n.forkEnabled() {
		t.Skip("python fork-servers need Landlock ABI 6")
	}
	var warm int64
	wrong := soakRuns(t, runs, 4, func(i int, ws string) runResult {
		kind, code := WarmPython, fmt.Sprintf("print(%d)", i)
		if i%5 == 0 {
			kind, code = WarmNode, fmt.Sprintf("console.log(%d)", i)
		}
		n.AwaitWarm(kind, 2*time.Second) // most runs served warm (refills run at low CPU weight)
		return runSpec(t, n, warmSpec(kind, ws, code))
	})
	for _, s := range n.PoolStats() {
		warm += int64(s.Hits)
	}
	forked := int64(forkHits(n))
	t.Logf("%d runs, %d served warm (%d forked), %d wrong", runs, warm, forked, wrong)
	if warm < int64(runs)/2 {
		t.Errorf("only %d of %d runs were served warm", warm, runs)
	}
	if fork && forked < int64(runs)/4 {
		t.Errorf("only %d of %d runs were forked", forked, runs)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, fdsBefore)
}

// soakRuns makes runs calls of run with workers at once, each with its
// own workspace, and returns how many did not print their index.
func soakRuns(t *testing.T, runs, workers int, run func(i int, ws string) runResult) int {
	dir := t.TempDir()
	var wrong int
	var mu sync.Mutex
	var wg sync.WaitGroup
	jobs := make(chan int)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ws := filepath.Join(dir, strconv.Itoa(i))
				_ = os.Mkdir(ws, 0o755)
				r := run(i, ws)
				if r.exit.Code != 0 || strings.TrimSpace(r.stdout) != strconv.Itoa(i) {
					mu.Lock()
					wrong++
					mu.Unlock()
					t.Errorf("run %d: %+v %q %q", i, r.exit, r.stdout, r.stderr)
				}
			}
		}()
	}
	for i := 0; i < runs; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return wrong
}

func countFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// checkNoLeaks expects no child processes, no cgroups or staging mounts of
// this process, and (about) as many descriptors as before.
func checkNoLeaks(t *testing.T, fdsBefore int) {
	t.Helper()
	pid := strconv.Itoa(os.Getpid())
	// Live children only: when other tests of the package have made the
	// test process a child subreaper (subprocess mode), dead sandbox
	// processes are re-parented to it as zombies nobody reaps here.
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(b)) {
			pid, _ := strconv.Atoi(p)
			if state, _ := proc.State(pid); state != 'Z' && state != 0 {
				t.Errorf("leaked child process %d (state %c)", pid, state)
			}
		}
	}
	groups, _ := filepath.Glob("/sys/fs/cgroup/*/codexec/*-" + pid)
	more, _ := filepath.Glob("/sys/fs/cgroup/*/*/codexec/*-" + pid)
	more2, _ := filepath.Glob("/sys/fs/cgroup/codexec/*-" + pid)
	if all := append(append(groups, more...), more2...); len(all) > 0 {
		t.Errorf("leaked cgroups: %v", all)
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); strings.Contains(string(b), "/run/codexec-"+pid) {
		t.Errorf("leaked staging mounts")
	}
	if after := countFDs(t); after > fdsBefore+2 {
		t.Errorf("descriptors: %d before, %d after", fdsBefore, after)
	}
}
