package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/tenant"
)

func withPrincipal(p string) context.Context { return tenant.With(context.Background(), p) }

// put stores content as item id of ctx's principal or fails the test.
func put(t *testing.T, s files.Store, ctx context.Context, id, path, content string) files.Item {
	t.Helper()
	it, _, err := s.Put(ctx, id, path, strings.NewReader(content), files.WriteOptions{Max: 1 << 20})
	if err != nil {
		t.Fatalf("put %s: %v", id, err)
	}
	return it
}

// emptyRoot opens a fresh directory as a workspace root.
func emptyRoot(t *testing.T) (*files.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := files.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

// hostileRoot is a workspace a sandboxed program prepared: two plain files
// (one with mode 0640) beside a symlink to a host file, a symlink to a
// directory outside, a FIFO and a hard link to a file outside.
func hostileRoot(t *testing.T) *files.Root {
	t.Helper()
	base := t.TempDir()
	ws, other := filepath.Join(base, "ws"), filepath.Join(base, "other")
	for _, d := range []string{filepath.Join(ws, "sub"), other} {
		must(t, os.MkdirAll(d, 0o755))
	}
	must(t, os.WriteFile(filepath.Join(other, "secret.txt"), []byte("other-secret"), 0o644))
	must(t, os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("fine"), 0o640))
	must(t, os.Chmod(filepath.Join(ws, "ok.txt"), 0o640))
	must(t, os.WriteFile(filepath.Join(ws, "sub", "deep.txt"), []byte("deep"), 0o644))
	must(t, os.Symlink("/etc/passwd", filepath.Join(ws, "passwd")))
	must(t, os.Symlink(other, filepath.Join(ws, "otherdir")))
	must(t, syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	must(t, os.Link(filepath.Join(other, "secret.txt"), filepath.Join(ws, "hardlink")))
	r, err := files.OpenRoot(ws)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantNotFound fails unless err is the store's not-found error for id, in
// the very words an unknown id gets (a foreign item must be
// indistinguishable from a missing one).
func wantNotFound(t *testing.T, what, id string, err error) {
	t.Helper()
	if !errors.Is(err, files.ErrNotFound) {
		t.Fatalf("%s: got %v, want not found", what, err)
	}
	if want := files.NotFound(id).Error(); err.Error() != want {
		t.Fatalf("%s: error %q, want %q", what, err, want)
	}
}

func sha(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

func ids(items []files.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.ID)
	}
	return out
}
