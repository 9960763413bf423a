package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/codexec/codexec/internal/files"
)

func testExpiry(t *testing.T, h *harness) {
	put(t, h.Store, alice(), "upl_e", "a.txt", "soon gone")
	h.clock.add(h.ttl - time.Second)
	if _, err := h.Store.Get(alice(), "upl_e"); err != nil {
		t.Fatalf("an item is gone before its TTL: %v", err)
	}
	h.clock.add(time.Second)
	_, err := h.Store.Get(alice(), "upl_e")
	wantNotFound(t, "get after the TTL", "upl_e", err)
	_, _, err = h.Store.Read(alice(), "upl_e", "a.txt", 0, 0, 100)
	wantNotFound(t, "read after the TTL", "upl_e", err)
	dst, _ := emptyRoot(t)
	_, err = h.Store.CopyTo(alice(), "upl_e", dst)
	wantNotFound(t, "copy after the TTL", "upl_e", err)
	if n := len(h.Store.List(alice())); n != 0 {
		t.Fatalf("an expired item is listed (%d items)", n)
	}
	h.Sweep()
	if h.Holds("upl_e") {
		t.Fatal("a swept item is still held by the storage")
	}
}

func testBudget(t *testing.T, h *harness) {
	for _, id := range []string{"upl_a", "upl_b", "upl_c"} {
		put(t, h.Store, alice(), id, "f", "12345")
		h.clock.add(time.Second)
	}
	_, err := h.Store.Get(alice(), "upl_a")
	wantNotFound(t, "the oldest item after a put over the budget", "upl_a", err)
	if h.Holds("upl_a") {
		t.Fatal("the evicted item is still held by the storage")
	}
	for _, id := range []string{"upl_b", "upl_c"} {
		if _, err := h.Store.Get(alice(), id); err != nil {
			t.Fatalf("%s evicted: %v", id, err)
		}
	}
	_, _, err = h.Store.Put(alice(), "upl_d", "f", strings.NewReader("0123456789A"), files.WriteOptions{Max: 100})
	if !errors.Is(err, files.ErrTooLarge) {
		t.Fatalf("a put larger than the budget: %v, want ErrTooLarge", err)
	}
	if h.Holds("upl_d") {
		t.Fatal("a refused put left bytes behind")
	}
	if _, err := h.Store.Get(alice(), "upl_c"); err != nil {
		t.Fatalf("a refused put evicted the newest item: %v", err)
	}
}

func testKeepBudget(t *testing.T, h *harness) {
	src, dir := emptyRoot(t)
	must(t, os.WriteFile(filepath.Join(dir, "big.bin"), []byte("0123456789A"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "small.txt"), []byte("1234"), 0o644))
	it, err := h.Store.Keep(alice(), "exec_k", src, []string{"big.bin", "small.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(it.Files) != 1 || it.Files[0].Path != "small.txt" || it.Bytes != 4 {
		t.Fatalf("kept %+v", it.Files)
	}
	if len(it.Skipped) != 1 || !strings.HasPrefix(it.Skipped[0], "big.bin: ") || !strings.Contains(it.Skipped[0], "too large") {
		t.Fatalf("skipped %q", it.Skipped)
	}
}

func testReopen(t *testing.T, h *harness) {
	up := put(t, h.Store, alice(), "upl_x", "a.txt", "hi")
	h.clock.add(time.Second)
	src := hostileRoot(t)
	kept, err := h.Store.Keep(alice(), "exec_x", src, []string{"ok.txt"})
	if err != nil {
		t.Fatal(err)
	}
	s2 := h.Reopen()
	// A restarted DirStore knows modes from the files themselves, not its
	// index; CopyTo below checks that the mode survives either way.
	ignoreMode := cmpopts.IgnoreFields(files.Entry{}, "Mode")
	if diff := cmp.Diff([]files.Item{kept, up}, s2.List(alice()), ignoreMode); diff != "" {
		t.Fatalf("reopened list (-want +got):\n%s", diff)
	}
	got, _, err := s2.Read(alice(), "upl_x", "a.txt", 0, 0, 10)
	if err != nil || string(got) != "hi" {
		t.Fatalf("after reopening: %q %v", got, err)
	}
	dst, dir := emptyRoot(t)
	if _, err := s2.CopyTo(alice(), "exec_x", dst); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "ok.txt")); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("copied after reopening: %v %v", st, err)
	}
	if !h.Shared {
		return
	}
	put(t, s2, bob(), "upl_y", "b.txt", "from the other replica")
	if diff := cmp.Diff([]string{"upl_y"}, ids(h.Store.List(bob()))); diff != "" {
		t.Fatalf("an item the other store kept (-want +got):\n%s", diff)
	}
	if got, _, err := h.Store.Read(bob(), "upl_y", "b.txt", 0, 4, 10); err != nil || string(got) != "from" {
		t.Fatalf("read of the other store's item: %q %v", got, err)
	}
}

// testEvictedElsewhere: an item one store has read (and may cache) and
// another store over the same storage evicts is gone for the first one too,
// for every way of reaching it. Only for shared stores.
func testEvictedElsewhere(t *testing.T, h *harness) {
	if !h.Shared {
		t.Skip("the store is not shared between running instances")
	}
	put(t, h.Store, alice(), "upl_a", "f", "12345")
	if got, _, err := h.Store.Read(alice(), "upl_a", "f", 0, 0, 10); err != nil || string(got) != "12345" {
		t.Fatalf("read: %q %v", got, err)
	}
	s2 := h.Reopen()
	for _, id := range []string{"upl_b", "upl_c"} {
		h.clock.add(time.Second)
		put(t, s2, alice(), id, "f", "67890")
	}
	_, err := h.Store.Get(alice(), "upl_a")
	wantNotFound(t, "get of the evicted item", "upl_a", err)
	_, _, err = h.Store.Read(alice(), "upl_a", "f", 0, 0, 10)
	wantNotFound(t, "read of the evicted item", "upl_a", err)
	dst, _ := emptyRoot(t)
	_, err = h.Store.CopyTo(alice(), "upl_a", dst)
	wantNotFound(t, "copy of the evicted item", "upl_a", err)
	if diff := cmp.Diff([]string{"upl_c", "upl_b"}, ids(h.Store.List(alice()))); diff != "" {
		t.Fatalf("list after the eviction (-want +got):\n%s", diff)
	}
}

// largeSize is bigger than any part or buffer a store may hold in memory.
const largeSize = 48 << 20

// testLarge keeps a file of largeSize bytes from a workspace, reads its
// last bytes, and copies it into another workspace: the bytes arrive
// intact, and the memory the test process allocated meanwhile stays well
// below the file's size (nothing holds the whole file).
func testLarge(t *testing.T, h *harness) {
	src, dir := emptyRoot(t)
	want := writeRandom(t, filepath.Join(dir, "big.bin"), largeSize)
	alloc := allocated()
	it, err := h.Store.Keep(alice(), "exec_big", src, []string{"big.bin"})
	if err != nil || len(it.Files) != 1 || it.Bytes != largeSize {
		t.Fatalf("keep: %+v %v", it, err)
	}
	tail, e, err := h.Store.Read(alice(), "exec_big", "big.bin", largeSize-1000, 1000, 1000)
	if err != nil || len(tail) != 1000 || e.Size != largeSize {
		t.Fatalf("read of the tail: %d bytes, %+v, %v", len(tail), e, err)
	}
	dst, out := emptyRoot(t)
	ws, err := h.Store.CopyTo(alice(), "exec_big", dst)
	if err != nil || len(ws) != 1 || ws[0].SHA256 != want {
		t.Fatalf("copy: %+v %v, want sha256 %s", ws, err, want)
	}
	used := allocated() - alloc
	if used > largeSize/3 {
		t.Errorf("keeping and copying a %d MiB file allocated %d MiB: the store buffers it", largeSize>>20, used>>20)
	}
	t.Logf("keeping, reading and copying %d MiB allocated %d KiB", largeSize>>20, used>>10)
	f, err := os.Open(filepath.Join(out, "big.bin"))
	must(t, err)
	defer f.Close()
	if _, err := f.Seek(largeSize-1000, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	back, _ := io.ReadAll(f)
	if string(back) != string(tail) {
		t.Fatal("the ranged read and the copied file disagree")
	}
}

// writeRandom writes n pseudo-random bytes to path, streaming, and returns
// their SHA-256.
func writeRandom(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Create(path)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	rng := rand.NewChaCha8([32]byte{7})
	if _, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(rng, n)); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// allocated is the bytes the process allocated so far.
func allocated() int64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.TotalAlloc)
}

// remover is the removal session checkpoints use (files.DirStore.Remove,
// s3store.Store.Remove).
type remover interface {
	Remove(ctx context.Context, id string) error
}

func testRemove(t *testing.T, h *harness) {
	r, ok := h.Store.(remover)
	if !ok {
		t.Fatalf("%T has no Remove", h.Store)
	}
	put(t, h.Store, alice(), "ck_1", "checkpoint", "state")
	wantNotFound(t, "bob's remove", "ck_1", r.Remove(bob(), "ck_1"))
	if _, err := h.Store.Get(alice(), "ck_1"); err != nil {
		t.Fatalf("bob's remove took alice's item: %v", err)
	}
	if err := r.Remove(alice(), "ck_1"); err != nil {
		t.Fatal(err)
	}
	_, err := h.Store.Get(alice(), "ck_1")
	wantNotFound(t, "get after remove", "ck_1", err)
	if h.Holds("ck_1") {
		t.Fatal("the storage still holds a removed item")
	}
	wantNotFound(t, "second remove", "ck_1", r.Remove(alice(), "ck_1"))
}
