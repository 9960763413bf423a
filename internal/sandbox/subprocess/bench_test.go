package subprocess

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// BenchmarkWatchdogCost times cold (bash -c true) and warm (python pass)
// runs with the server's watchdog off and on: with it on, every run's
// process group is registered and unregistered over the watchdog's pipe.
//
//	go test ./internal/sandbox/subprocess/ -run '^$' -bench WatchdogCost -benchtime 50x
func BenchmarkWatchdogCost(b *testing.B) {
	for _, kind := range []string{"cold", sandbox.WarmPython} {
		for _, on := range []bool{false, true} {
			b.Run(kind+"/watchdog="+strconv.FormatBool(on), func(b *testing.B) {
				if on {
					if err := proc.StartWatchdog(); err != nil {
						b.Fatal(err)
					}
					defer proc.StopWatchdog()
				}
				benchRuns(b, kind)
			})
		}
	}
}

// benchRuns times b.N runs of kind, each warm one on a ready runner (the
// wait for it is not timed).
func benchRuns(b *testing.B, kind string) {
	dir := b.TempDir()
	spec := sandboxtest.WarmSpec(kind, dir, "pass")
	s := New(sandbox.PoolOptions{Size: 1, Burst: 1, Idle: time.Minute, MemoryBytes: 256 << 20})
	defer s.Close()
	if kind == "cold" {
		spec = sandboxtest.WarmSpec(sandbox.WarmBash, dir, "true")
		spec.Warm = ""
	}
	spec.Stdout, spec.Stderr = io.Discard, io.Discard
	for b.Loop() {
		if kind != "cold" {
			b.StopTimer()
			s.Prewarm(spec)
			if _, ok := s.AwaitWarm(kind, 20*time.Second); !ok {
				b.Fatal("no warm runner")
			}
			b.StartTimer()
		}
		p, err := s.Start(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Wait(); err != nil {
			b.Fatal(err)
		}
		_ = p.Release(time.Second)
	}
}
