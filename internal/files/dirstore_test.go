package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/tenant"
)

// clock is a settable time source for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newStore(t *testing.T, max int64) (*DirStore, *clock, string) {
	t.Helper()
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	dir := filepath.Join(t.TempDir(), "store")
	s, err := NewDirStore(dir, DirOptions{TTL: time.Hour, MaxBytes: max, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, c, dir
}

func TestKeepSkipsHostileAndReads(t *testing.T) {
	r, _ := hostile(t)
	s, _, _ := newStore(t, 1<<20)
	ctx := context.Background()
	it, err := s.Keep(ctx, "exec_1", r, []string{"ok.txt", "sub/deep.txt", "passwd", "otherdir/secret.txt", "fifo", "hardlink"})
	if err != nil {
		t.Fatal(err)
	}
	if len(it.Files) != 2 || len(it.Skipped) != 4 {
		t.Fatalf("kept %+v skipped %q", it.Files, it.Skipped)
	}
	got, _, err := s.Read(ctx, "exec_1", "sub/deep.txt", 0, 0, 100)
	if err != nil || string(got) != "deep" {
		t.Fatalf("read = %q, %v", got, err)
	}
	if _, _, err := s.Read(ctx, "exec_1", "passwd", 0, 0, 100); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a skipped file is readable: %v", err)
	}
}

func TestStoreOwnerAndExpiry(t *testing.T) {
	s, c, dir := newStore(t, 1<<20)
	alice, bob := tenant.With(context.Background(), "alice"), tenant.With(context.Background(), "bob")
	if _, _, err := s.Put(alice, "upl_a", "in/data.bin", strings.NewReader("xyz"), WriteOptions{Max: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(bob, "upl_a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob sees alice's item: %v", err)
	}
	if _, _, err := s.Read(bob, "upl_a", "in/data.bin", 0, 0, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("bob reads alice's file: %v", err)
	}
	if n := len(s.List(bob)); n != 0 {
		t.Fatalf("bob lists %d items", n)
	}
	if n := len(s.List(alice)); n != 1 {
		t.Fatalf("alice lists %d items", n)
	}
	c.add(time.Hour)
	if _, err := s.Get(alice, "upl_a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired item still served: %v", err)
	}
	s.Sweep()
	if _, err := os.Stat(filepath.Join(dir, "upl_a")); !os.IsNotExist(err) {
		t.Fatalf("swept item still on disk: %v", err)
	}
}

func TestStoreBudgetEvictsOldest(t *testing.T) {
	s, c, _ := newStore(t, 10)
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c"} {
		if _, _, err := s.Put(ctx, id, "f", strings.NewReader("12345"), WriteOptions{Max: 5}); err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		c.add(time.Second)
	}
	if _, err := s.Get(ctx, "a"); err == nil {
		t.Fatal("oldest item not evicted")
	}
	for _, id := range []string{"b", "c"} {
		if _, err := s.Get(ctx, id); err != nil {
			t.Fatalf("%s evicted: %v", id, err)
		}
	}
	if _, _, err := s.Put(ctx, "d", "f", strings.NewReader("0123456789A"), WriteOptions{Max: 100}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized put: %v", err)
	}
}

func TestStoreReload(t *testing.T) {
	s, c, dir := newStore(t, 1<<20)
	if _, _, err := s.Put(context.Background(), "upl_x", "a.txt", strings.NewReader("hi"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	s2, err := NewDirStore(dir, DirOptions{TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, _, err := s2.Read(context.Background(), "upl_x", "a.txt", 0, 0, 10)
	if err != nil || string(got) != "hi" {
		t.Fatalf("after reload: %q %v", got, err)
	}
	ws := t.TempDir()
	r, _ := OpenRoot(ws)
	defer r.Close()
	if _, err := s2.CopyTo(context.Background(), "upl_x", r); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hi" {
		t.Fatalf("copied %q", b)
	}
}
