//go:build linux

package namespace

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestWarmSoak runs many pooled runs at concurrency 4, then closes the
// backend and checks nothing is left: processes, cgroups, staging mounts,
// descriptors. 200 runs by default (50 with -short), so the whole suite stays
// light on a shared machine; the proof run is CODEXEC_SOAK_RUNS=2000. It runs
// with python runners started whole and forked from a zygote; a fifth of
// the runs are node, a fifth bash (exec runners).
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
	fdsBefore := sandboxtest.CountFDs(t)
	n := newPoolNamespace(t, sandbox.PoolOptions{Size: 4, Idle: time.Minute, Fork: fork})
	if fork && !n.forkEnabled() {
		t.Skip("python fork-servers need Landlock ABI 6")
	}
	var warm int64
	wrong := sandboxtest.SoakRuns(t, runs, 4, func(i int, ws string) sandboxtest.Result {
		kind, code := sandbox.WarmPython, fmt.Sprintf("print(%d)", i)
		switch i % 5 {
		case 0:
			kind, code = sandbox.WarmNode, fmt.Sprintf("console.log(%d)", i)
		case 2:
			kind, code = sandbox.WarmBash, fmt.Sprintf("echo %d", i)
		}
		// Most runs are served warm: refills run at low CPU weight, so on a
		// loaded machine one can take seconds; the wait ends as soon as one is
		// ready.
		n.AwaitWarm(kind, 10*time.Second)
		return sandboxtest.Run(t, n, sandboxtest.WarmSpec(kind, ws, code))
	})
	for _, s := range n.PoolStats() {
		warm += int64(s.Hits)
	}
	forked := int64(sandboxtest.ForkHits(n))
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
	sandboxtest.CheckNoLeaks(t, fdsBefore)
}
