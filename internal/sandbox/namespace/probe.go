//go:build linux

package namespace

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/sandbox"
)

// probe runs `sh -c 'echo ok'` in a fresh sandbox, the whole chain a run
// takes (sandbox-init, bwrap, sandbox-landlock), and explains a failure.
func (n *Backend) probe(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "codexec-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.Chown(dir, n.hostUID, n.hostGID); err != nil {
		return err
	}
	var out, errb limitedBuffer
	spec := sandbox.Spec{ID: "probe", Argv: []string{"/bin/sh", "-c", "echo ok"}, Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Stdout: &out, Stderr: &errb,
		Limits: sandbox.Limits{MemoryBytes: 64 << 20, Pids: 16, DiskBytes: 1 << 20}}
	p, err := n.startFresh(spec, "probe-"+strconv.FormatInt(runSeq.Add(1), 10))
	if err != nil {
		if strings.Contains(err.Error(), "read-only file system") {
			return fmt.Errorf("the namespace sandbox could not start a test program: %w; the cgroup file system is read-only, "+
				"so runs cannot be limited: inside a container, mount it read-write (see docs/install.md)", err)
		}
		return fmt.Errorf("the namespace sandbox could not start a test program: %w", err)
	}
	ex, err := p.Wait()
	_ = p.Release(time.Second)
	if err != nil {
		return fmt.Errorf("the namespace sandbox's test program did not finish: %w", err)
	}
	if ex.Code != 0 || ex.Signal != 0 || string(trimNL(out.b)) != "ok" {
		return probeFailure(n.opts.Bwrap, n.opts.UID, ex, string(trimNL(out.b)), string(trimNL(errb.b)))
	}
	return nil
}

// probeHints map what bwrap (or the helper) prints to the likely cause and
// fix. The first hint whose marker the output contains applies.
var probeHints = []struct{ marker, hint string }{
	{"namespace", "the kernel or a security profile refuses user namespaces to unprivileged users: check " +
		"user.max_user_namespaces > 0 (and kernel.unprivileged_userns_clone = 1 where it exists, " +
		"kernel.apparmor_restrict_unprivileged_userns = 0 on Ubuntu 23.10+); inside a container, run it with the " +
		"flags in docs/install.md (a seccomp profile that allows unshare and mount)"},
	{"uid map", "the kernel refuses the sandbox's uid map: check user.max_user_namespaces > 0; inside a container, see docs/install.md"},
	{"mount", "mounting inside the sandbox was refused: inside a container the engine's masked /proc paths and its default " +
		"seccomp or AppArmor profile forbid it; run it with the flags in docs/install.md (podman: --security-opt unmask=ALL; " +
		"docker: --security-opt systempaths=unconfined)"},
	{"No such file", "a program the sandbox needs is missing: bwrap and /bin/sh must exist on the host (/usr is bound read-only into the sandbox)"},
	{"Permission denied", "the sandbox user (uid 65534) cannot reach a file it needs: bwrap, the codexec binary (or codexec-sandbox beside it) and every directory above them must be readable and executable by it"},
}

// probeFailure says what failed, what it printed and what to do.
func probeFailure(bwrap string, uid int, ex sandbox.Exit, stdout, stderr string) error {
	what := fmt.Sprintf("exited with status %d", ex.Code)
	switch {
	case ex.Signal != 0:
		what = fmt.Sprintf("was killed by signal %d", ex.Signal)
	case ex.Code == 0:
		what = fmt.Sprintf("printed %q instead of ok", stdout)
	}
	said := "and printed nothing on stderr"
	if stderr != "" {
		said = fmt.Sprintf("saying %q", stderr)
	}
	hint := fmt.Sprintf("check that bubblewrap works for the sandbox user: as root, `setpriv --reuid %d --regid %d --clear-groups %s "+
		"--unshare-all --ro-bind / / --proc /proc --dev /dev /bin/true` must succeed (its error names the cause)", uid, uid, bwrap)
	for _, h := range probeHints {
		if strings.Contains(strings.ToLower(stderr), strings.ToLower(h.marker)) {
			hint = h.hint
			break
		}
	}
	return fmt.Errorf("the namespace sandbox cannot run programs: a test program (sh -c 'echo ok') run through %s %s, %s; %s",
		bwrap, what, said, hint)
}
