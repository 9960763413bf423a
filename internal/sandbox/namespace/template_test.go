//go:build linux

package namespace

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/warm"
)

// templateState lists the template's own files (not those of the host
// trees bound into it) and its mounts.
func templateState(t *testing.T, n *Backend) (files []string, mounts int) {
	t.Helper()
	ns, err := n.tmpl.Join()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	err = warm.InMountNS(ns, func() error {
		err := filepath.WalkDir("/", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != "/" && isMountPoint(p) && d.IsDir() {
				files = append(files, p+" (mount)")
				return filepath.SkipDir
			}
			files = append(files, p)
			return nil
		})
		if err != nil {
			return err
		}
		b, err := os.ReadFile("/proc/thread-self/mountinfo")
		mounts = strings.Count(string(b), "\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files, mounts
}

// isMountPoint reports whether p is a mount's root (its device differs
// from its parent's).
func isMountPoint(p string) bool {
	var a, b unix.Stat_t
	if unix.Lstat(p, &a) != nil || unix.Lstat(filepath.Dir(p), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}

// TestTemplateShared checks the one thing runs now share, the template
// namespace bwrap starts from: it is read-only even to root inside it, a
// run can neither change it nor see another run's files through it (one
// after the other, and two at once on the same mount point), and runs
// leave no mount in it.
func TestTemplateShared(t *testing.T) {
	n := newTestNamespace(t)
	if n.tmpl == nil {
		t.Skip("bwrap starts from the host mount namespace here (see the server's log for why)")
	}
	filesBefore, mountsBefore := templateState(t, n)
	t.Logf("template: %d mounts, %d files", mountsBefore, len(filesBefore))
	ns, err := n.tmpl.Join()
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	err = warm.InMountNS(ns, func() error {
		for _, p := range []string{"/x", "/etc/x", "/.s/d0/x", "/usr/x"} {
			if err := os.WriteFile(p, nil, 0o644); !errors.Is(err, unix.EROFS) {
				return errors.New("root could write " + p + " in the template: " + errString(err))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const tamper = `for p in /etc/passwd /etc/x /usr/x /opt/codexec/init /opt/codexec/x /var/cache/fontconfig/x; do
  if (echo x > $p) 2>/dev/null; then echo "wrote $p"; fi
done
ls -d /.s /.old 2>/dev/null; mount -o remount,rw /etc 2>/dev/null && echo remounted
[ -e /tmp/mark ] && echo "tmp holds $(cat /tmp/mark)"; ls "$HOME"
echo $2 > /tmp/mark; echo $2 > "$HOME/mark"; sleep $1; { cat /tmp/mark; ls "$HOME"; } | tr '\n' ' '`
	a, b := t.TempDir(), t.TempDir()
	done := make(chan string, 1)
	go func() { _, out, errb := runShell(t, n, a, tamper, "0.5", "a"); done <- out + errb }()
	time.Sleep(200 * time.Millisecond) // a is sleeping with its workspace on the same point
	_, outB, errB := runShell(t, n, b, tamper, "0", "b")
	outA := <-done
	for _, c := range []struct{ name, got, want string }{{"first run", outA, "a mark "}, {"second run", outB + errB, "b mark "}} {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s: each run sees only its own /tmp and workspace, changes nothing shared (-want +got):\n%s", c.name, diff)
		}
	}
	for _, ws := range []string{a, b} {
		if ents, _ := os.ReadDir(ws); len(ents) != 1 || ents[0].Name() != "mark" {
			t.Errorf("workspace %s holds %v, want its own mark only", ws, ents)
		}
	}
	filesAfter, mountsAfter := templateState(t, n)
	if diff := cmp.Diff(filesBefore, filesAfter); diff != "" {
		t.Errorf("the template changed (-before +after):\n%s", diff)
	}
	if mountsAfter != mountsBefore {
		t.Errorf("template mounts: %d before the runs, %d after", mountsBefore, mountsAfter)
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// runShell runs script with sh in workspace dir (arguments args).
func runShell(t *testing.T, n *Backend, dir, script string, args ...string) (sandbox.Exit, string, string) {
	t.Helper()
	var out, errb strings.Builder
	spec := sandbox.Spec{ID: "t", Argv: append([]string{"/bin/sh", "-c", script, "sh"}, args...), Dir: dir,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + dir}, Stdout: &out, Stderr: &errb,
		Limits: sandbox.Limits{MemoryBytes: 64 << 20, Pids: 16}}
	p, err := n.Start(context.Background(), spec)
	if err != nil {
		t.Error(err)
		return sandbox.Exit{}, "", ""
	}
	ex, err := p.Wait()
	if err != nil {
		t.Error(err)
	}
	_ = p.Release(time.Second)
	return ex, out.String(), errb.String()
}
