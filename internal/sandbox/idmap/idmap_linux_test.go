//go:build linux

package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/confine"
	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// TestMain lets the test binary act as the helper (HoldCommand).
func TestMain(m *testing.M) {
	if code, ok := helper.Dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

const nobody = 65534

// mapped clones a fresh 0700 directory owned by owner holding a 0600 file,
// or skips where the host cannot.
func mapped(t *testing.T, owner sandbox.Owner, ro bool) (dir string, tree *os.File) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("idmapped mounts need root")
	}
	dir = t.TempDir()
	f := filepath.Join(dir, "secret")
	if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, f} {
		if err := os.Chown(p, owner.UID, owner.GID); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	m := New(exe, nobody, nobody)
	t.Cleanup(m.Close)
	tree, err = m.Clone(dir, owner, ro)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no idmapped mounts here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tree.Close() })
	return dir, tree
}

// TestCloneGivesOwnerRights: through the clone the sandbox user reads the
// owner's 0600 file, sees it as its own, writes fail read-only, and a
// writable clone's new file lands on the host owned by the owner.
func TestCloneGivesOwnerRights(t *testing.T) {
	for _, tc := range []struct {
		name  string
		owner sandbox.Owner
	}{{"root", sandbox.Owner{UID: 0, GID: 0}}, {"uid 1234", sandbox.Owner{UID: 1234, GID: 1234}}} {
		t.Run(tc.name, func(t *testing.T) {
			_, ro := mapped(t, tc.owner, true)
			as := confine.As(nobody, nobody)
			var st unix.Stat_t
			err := as.Do(func() error {
				fd, err := unix.Openat(int(ro.Fd()), "secret", unix.O_RDONLY, 0)
				if err != nil {
					return err
				}
				defer unix.Close(fd)
				return unix.Fstat(fd, &st)
			})
			if err != nil || st.Uid != nobody {
				t.Fatalf("read through the read-only clone: %v, uid %d", err, st.Uid)
			}
			err = as.Do(func() error {
				fd, err := unix.Openat(int(ro.Fd()), "new", unix.O_CREAT|unix.O_WRONLY, 0o600)
				if err == nil {
					unix.Close(fd)
				}
				return err
			})
			if !errors.Is(err, syscall.EROFS) {
				t.Fatalf("write through the read-only clone: %v, want EROFS", err)
			}
			dir, rw := mapped(t, tc.owner, false)
			err = as.Do(func() error {
				fd, err := unix.Openat(int(rw.Fd()), "new", unix.O_CREAT|unix.O_WRONLY, 0o600)
				if err == nil {
					unix.Close(fd)
				}
				return err
			})
			if err != nil {
				t.Fatalf("write through the writable clone: %v", err)
			}
			if err := unix.Stat(filepath.Join(dir, "new"), &st); err != nil || int(st.Uid) != tc.owner.UID || int(st.Gid) != tc.owner.GID {
				t.Fatalf("the new file on the host: %v, owner %d:%d, want %d:%d", err, st.Uid, st.Gid, tc.owner.UID, tc.owner.GID)
			}
		})
	}
}
