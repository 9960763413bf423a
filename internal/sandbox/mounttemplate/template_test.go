//go:build linux

package mounttemplate

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestRebuiltWhenFileReplaced replaces a watched file (a stand-in for
// /etc/ld.so.cache after ldconfig): the next Join after the check interval
// gives a new namespace, and none before the file changes.
func TestRebuiltWhenFileReplaced(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("building a mount namespace needs root")
	}
	watched := filepath.Join(t.TempDir(), "watched")
	if err := os.WriteFile(watched, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	tm, err := Open(Config{Scratch: t.TempDir(), Files: []string{watched}})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.Close()
	nsID := func() string {
		tm.mu.Lock()
		tm.checked = time.Time{} // as if the interval had passed
		tm.mu.Unlock()
		f, err := tm.Join()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		id, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	before := nsID()
	if again := nsID(); again != before {
		t.Fatalf("template rebuilt without a change: %s then %s", before, again)
	}
	next := watched + ".new"
	if err := errors.Join(os.WriteFile(next, []byte("two"), 0o644), os.Rename(next, watched)); err != nil {
		t.Fatal(err)
	}
	if after := nsID(); after == before {
		t.Errorf("template namespace still %s after the watched file was replaced", before)
	}
}
