//go:build linux

package namespace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// TestProbeFailureSays: a failed probe names what failed, quotes what it
// printed and gives the fix that fits the message.
func TestProbeFailureSays(t *testing.T) {
	cases := []struct {
		name           string
		ex             sandbox.Exit
		stdout, stderr string
		want           []string
	}{
		{"silent exit", sandbox.Exit{Code: 1}, "", "",
			[]string{"/usr/bin/bwrap exited with status 1, and printed nothing on stderr", "setpriv --reuid 65534"}},
		{"no user namespaces", sandbox.Exit{Code: 1}, "", "bwrap: Creating new namespace failed: Operation not permitted",
			[]string{`saying "bwrap: Creating new namespace failed: Operation not permitted"`, "user.max_user_namespaces", "docs/install.md"}},
		{"mount refused", sandbox.Exit{Code: 1}, "", "bwrap: Can't mount proc on /newroot/proc: Operation not permitted",
			[]string{"mounting inside the sandbox was refused", "docs/install.md"}},
		{"exec refused", sandbox.Exit{Code: 125}, "", "codexec sandbox-init: permission denied",
			[]string{"exited with status 125", "cannot reach a file it needs"}},
		{"killed", sandbox.Exit{Code: -1, Signal: 9}, "", "", []string{"was killed by signal 9"}},
		{"wrong output", sandbox.Exit{}, "ko", "", []string{`printed "ko" instead of ok`}},
	}
	for _, c := range cases {
		msg := probeFailure("/usr/bin/bwrap", 65534, c.ex, c.stdout, c.stderr).Error()
		var missing []string
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				missing = append(missing, w)
			}
		}
		if diff := cmp.Diff([]string(nil), missing); diff != "" {
			t.Errorf("%s: %q lacks (-want +got)\n%s", c.name, msg, diff)
		}
		if !strings.HasPrefix(msg, "the namespace sandbox cannot run programs: a test program (sh -c 'echo ok') run through /usr/bin/bwrap ") {
			t.Errorf("%s: %q does not say what failed first", c.name, msg)
		}
	}
}

// TestProbeBrokenBwrap: New with a bwrap that fails the way a blocked one
// does returns the explanation with bwrap's own message.
func TestProbeBrokenBwrap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the namespace backend needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} { // the sandbox user execs it
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fake := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: Creating new namespace failed: Operation not permitted' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{OwnedRoot: sandboxtest.OwnedRoot, Bwrap: fake})
	if err == nil {
		t.Fatal("New succeeded with a bwrap that always fails")
	}
	for _, want := range []string{fake + " exited with status 1", "Creating new namespace failed", "user.max_user_namespaces"} {
		if !strings.Contains(err.Error(), want) {
			if strings.Contains(err.Error(), "resource limits unavailable") {
				t.Skipf("namespace backend unavailable before the probe: %v", err)
			}
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
