package driver

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/output"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
	"github.com/codexec/codexec/internal/sandbox/subprocess"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// start starts lang's driver in the subprocess backend.
func start(t testing.TB, lang string) *Conn {
	t.Helper()
	interp, err := exec.LookPath(map[string]string{"python": "python3", "node": "node"}[lang])
	if err != nil {
		t.Skipf("%s is not installed: %v", lang, err)
	}
	b, dir := subprocess.New(sandbox.PoolOptions{}), t.TempDir()
	launch := func(ctx context.Context, argv []string, stdin *os.File, stdout, stderr io.Writer) (sandbox.Process, error) {
		return b.Start(ctx, sandbox.Spec{Argv: argv, Dir: dir, Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir},
			Stdin: stdin, Stdout: stdout, Stderr: stderr})
	}
	c, err := Start(context.Background(), lang, interp, launch, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(time.Second) })
	return c
}

func exec1(t testing.TB, c *Conn, code string) Outcome {
	t.Helper()
	return c.Exec(context.Background(), code, 10*time.Second, time.Second, output.Limits{Max: 1 << 20, Head: 1 << 19, Tail: 1 << 19}, nil)
}

// TestCheckpointRoundTrip: what one driver checkpoints, another restores
// (python through a warmed reserve and inbox, node without), and the
// reports name what came back.
func TestCheckpointRoundTrip(t *testing.T) {
	tests := []struct {
		lang, setup, check, want string
		rv                       Reserve
		values                   []string
	}{
		{"python", "rows = [{'id': i} for i in range(5000)]\ndef f(x): return x + 1", "print(len(rows), f(1))", "5000 2\n",
			Reserve{Objects: 4 << 20, Inbox: 1 << 20}, []string{"rows"}},
		{"python", "s = 'x' * 10", "print(s)", "xxxxxxxxxx\n", Reserve{}, []string{"s"}},
		{"node", "let rows = [1, 2, 3]", "console.log(rows.length)", "3\n", Reserve{Objects: 1 << 20}, []string{"rows"}},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			ctx := context.Background()
			a := start(t, tt.lang)
			if oc := exec1(t, a, tt.setup); !oc.Reply.OK {
				t.Fatalf("setup: %+v", oc)
			}
			state, rep, err := a.Checkpoint(ctx, 64<<20, 10*time.Second, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.values, rep.Values); diff != "" {
				t.Errorf("checkpoint values -want +got\n%s", diff)
			}
			b := start(t, tt.lang)
			if err := b.Warm(ctx, tt.rv, 10*time.Second, time.Second); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Restore(ctx, state, false, 10*time.Second, time.Second); err != nil {
				t.Fatal(err)
			}
			if oc := exec1(t, b, tt.check); oc.Stdout != tt.want {
				t.Errorf("after restore: %q %q, want %q", oc.Stdout, oc.Stderr, tt.want)
			}
		})
	}
}

func TestCheckpointOverLimit(t *testing.T) {
	c := start(t, "python")
	exec1(t, c, "big = 'x' * 100000")
	_, _, err := c.Checkpoint(context.Background(), 1000, 10*time.Second, time.Second)
	if !errors.Is(err, ErrStateTooBig) {
		t.Fatalf("checkpoint over the limit: %v", err)
	}
	if oc := exec1(t, c, "print(len(big))"); oc.Stdout != "100000\n" {
		t.Errorf("the session after a refused checkpoint: %+v", oc)
	}
}

func TestExecTimeoutAndDeath(t *testing.T) {
	c := start(t, "python")
	oc := c.Exec(context.Background(), "import time\ntime.sleep(30)", 200*time.Millisecond, time.Second, output.Limits{Max: 1000, Head: 500, Tail: 500}, nil)
	if !oc.TimedOut || !oc.Interrupted || oc.Lost {
		t.Errorf("timeout: %+v", oc)
	}
	oc = exec1(t, c, "import os\nos._exit(3)")
	if !oc.Lost || !c.IsDead() || !strings.Contains(c.DeathReason(), "code 3") {
		t.Errorf("exit: %+v, dead %v, %q", oc, c.IsDead(), c.DeathReason())
	}
}

// TestCheckpointDropsOutput: what the code prints while its state is
// checkpointed (a __getstate__ that prints) is dropped, not sent anywhere.
func TestCheckpointDropsOutput(t *testing.T) {
	c := start(t, "python")
	exec1(t, c, "class P:\n    def __getstate__(self):\n        print('noise ' * 50)\n        return {}\np = P()")
	if _, _, err := c.Checkpoint(context.Background(), 1<<20, 10*time.Second, time.Second); err != nil {
		t.Fatal(err)
	}
	if oc := exec1(t, c, "print('after')"); oc.Stdout != "after\n" {
		t.Errorf("the next run's output: %q", oc.Stdout)
	}
}
