package confine

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDoChecksTheSandboxUsersRights(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root")
	}
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
		// ACLs a host's /tmp passed down would decide instead of the modes.
		for _, name := range []string{"system.posix_acl_default", "system.posix_acl_access"} {
			_ = unix.Removexattr(d, name)
		}
	}
	write := func(name string, mode os.FileMode, uid, gid int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(name), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name     string
		mode     os.FileMode
		uid, gid int
		readable bool
	}{
		{"root-only", 0o600, 0, 0, false},
		{"root-group", 0o640, 0, 0, false}, // root's own group must not count
		{"world", 0o644, 0, 0, true},
		{"own", 0o600, 65534, 65534, true},
		{"own-group", 0o040, 0, 65534, true},
	}
	as := As(65534, 65534)
	for _, c := range cases {
		p := write(c.name, c.mode, c.uid, c.gid)
		err := as.Do(func() error {
			f, err := os.Open(p)
			if err == nil {
				f.Close()
			}
			return err
		})
		if (err == nil) != c.readable {
			t.Errorf("%s: open as sandbox user: %v, want readable %v", c.name, err, c.readable)
		}
		if err != nil && !errors.Is(err, os.ErrPermission) {
			t.Errorf("%s: %v is not a permission error", c.name, err)
		}
	}
	// The server's own identity and the calling goroutine keep root's rights.
	if err := (Identity{}).Do(func() error { _, err := os.ReadFile(filepath.Join(dir, "root-only")); return err }); err != nil {
		t.Errorf("server identity: %v", err)
	}
	if _, err := os.ReadFile(filepath.Join(dir, "root-only")); err != nil {
		t.Errorf("after Do the server lost its rights: %v", err)
	}
	if uid, _ := unix.SetfsuidRetUid(-1); uid != 0 {
		t.Errorf("calling thread's fsuid changed to %d", uid)
	}
}

func BenchmarkDo(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("acting as another user needs root")
	}
	as := As(65534, 65534)
	b.Run("server", func(b *testing.B) {
		for b.Loop() {
			_ = Identity{}.Do(func() error { return nil })
		}
	})
	b.Run("sandbox-user", func(b *testing.B) {
		for b.Loop() {
			_ = as.Do(func() error { return nil })
		}
	})
}

// TestDoAsRootChecksOwnerBits: acting with root's identity (a directory
// root owns) checks root's permission bits like any owner's, with none of
// root's overriding capabilities.
func TestDoAsRootChecksOwnerBits(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root")
	}
	dir := t.TempDir()
	cases := []struct {
		name     string
		mode     os.FileMode
		uid      int
		readable bool
	}{
		{"root 0600", 0o600, 0, true},
		{"root 0000", 0o000, 0, false},
		{"other user 0600", 0o600, 1234, false},
	}
	for _, c := range cases {
		p := filepath.Join(dir, c.name)
		if err := os.WriteFile(p, []byte("x"), c.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, c.uid, c.uid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, c.mode); err != nil {
			t.Fatal(err)
		}
		err := As(0, 0).Do(func() error {
			f, err := os.Open(p)
			if err == nil {
				f.Close()
			}
			return err
		})
		if got := err == nil; got != c.readable {
			t.Errorf("%s: readable = %v (%v), want %v", c.name, got, err, c.readable)
		}
	}
}
