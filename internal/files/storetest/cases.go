package storetest

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/files"
)

func testPutGet(t *testing.T, h *harness) {
	now := h.clock.now()
	it, w, err := h.Store.Put(alice(), "upl_1", "in/./data.bin", strings.NewReader("hello"), files.WriteOptions{Mode: 0o600, Max: 5})
	if err != nil {
		t.Fatal(err)
	}
	want := files.Item{ID: "upl_1", Owner: "alice", Created: now, Expires: now.Add(h.ttl), Bytes: 5,
		Files: []files.Entry{{Path: "in/data.bin", Size: 5, MTime: now, Type: "file", Mode: 0o600}}}
	if diff := cmp.Diff(want, it); diff != "" {
		t.Fatalf("put item (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(files.Written{Path: "in/data.bin", Size: 5, SHA256: sha([]byte("hello"))}, w); diff != "" {
		t.Fatalf("written (-want +got):\n%s", diff)
	}
	got, err := h.Store.Get(alice(), "upl_1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("get (-want +got):\n%s", diff)
	}
	if !h.Holds("upl_1") {
		t.Fatal("the storage holds nothing of a stored item")
	}
}

func testPutRefuses(t *testing.T, h *harness) {
	put(t, h.Store, alice(), "upl_dup", "a.txt", "first")
	for _, tc := range []struct {
		name, id, path, content string
		max                     int64
		wantErr                 error // nil: any error
	}{
		{"more than max", "upl_big", "a.txt", "123456", 5, files.ErrTooLarge},
		{"an existing id", "upl_dup", "b.txt", "second", 100, nil},
		{"an empty id", "", "a.txt", "x", 100, nil},
		{"an id with a slash", "a/b", "a.txt", "x", 100, nil},
		{"an id leaving the store", "../up", "a.txt", "x", 100, nil},
		{"a hidden id", ".hidden", "a.txt", "x", 100, nil},
		{"a path leaving the item", "upl_p1", "../a.txt", "x", 100, nil},
		{"an absolute path", "upl_p2", "/etc/passwd", "x", 100, nil},
		{"the item itself", "upl_p3", "", "x", 100, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := h.Store.Put(alice(), tc.id, tc.path, strings.NewReader(tc.content), files.WriteOptions{Max: tc.max})
			if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("put: %v, want an error (%v)", err, tc.wantErr)
			}
			if tc.id == "upl_dup" {
				return
			}
			if _, err := h.Store.Get(alice(), tc.id); !errors.Is(err, files.ErrNotFound) {
				t.Fatalf("a refused item is served: %v", err)
			}
			if tc.id != "" && !strings.Contains(tc.id, "/") && h.Holds(tc.id) {
				t.Fatal("a refused item left bytes behind")
			}
		})
	}
	data, _, err := h.Store.Read(alice(), "upl_dup", "a.txt", 0, 0, 100)
	if err != nil || string(data) != "first" {
		t.Fatalf("the first item changed: %q %v", data, err)
	}
}

func testReadRanges(t *testing.T, h *harness) {
	put(t, h.Store, alice(), "upl_r", "d/ten.txt", "0123456789")
	for _, tc := range []struct {
		name                string
		offset, length, max int64
		want                string
		wantErr             bool
		tooLarge            bool
	}{
		{"whole", 0, 0, 100, "0123456789", false, false},
		{"middle", 2, 3, 100, "234", false, false},
		{"past the end is cut", 8, 5, 100, "89", false, false},
		{"at the end", 10, 0, 100, "", false, false},
		{"to the end within max", 0, 0, 4, "0123", false, false},
		{"from an offset within max", 3, 0, 4, "3456", false, false},
		{"beyond the end", 11, 0, 100, "", true, false},
		{"a negative offset", -1, 0, 100, "", true, false},
		{"a length over max", 0, 50, 20, "", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, e, err := h.Store.Read(alice(), "upl_r", "d/ten.txt", tc.offset, tc.length, tc.max)
			if tc.wantErr {
				if err == nil || (tc.tooLarge && !errors.Is(err, files.ErrTooLarge)) {
					t.Fatalf("read: %q %v, want an error (too large: %v)", got, err, tc.tooLarge)
				}
				return
			}
			if err != nil || string(got) != tc.want || e.Size != 10 || e.Path != "d/ten.txt" {
				t.Fatalf("read = %q %+v %v, want %q", got, e, err, tc.want)
			}
		})
	}
	for _, p := range []string{"d/other.txt", "ten.txt", "d"} {
		if _, _, err := h.Store.Read(alice(), "upl_r", p, 0, 0, 100); !errors.Is(err, files.ErrNotFound) {
			t.Errorf("read %s: %v, want not found", p, err)
		}
	}
	if _, _, err := h.Store.Read(alice(), "upl_r", "../upl_r/d/ten.txt", 0, 0, 100); err == nil {
		t.Error("a path with .. was read")
	}
	_, _, err := h.Store.Read(alice(), "upl_none", "d/ten.txt", 0, 0, 100)
	wantNotFound(t, "read of an unknown item", "upl_none", err)
}

func testCopyTo(t *testing.T, h *harness) {
	content := "#!/bin/sh\necho hi\n"
	if _, _, err := h.Store.Put(alice(), "upl_c", "bin/run.sh", strings.NewReader(content), files.WriteOptions{Mode: 0o755}); err != nil {
		t.Fatal(err)
	}
	dst, dir := emptyRoot(t)
	ws, err := h.Store.CopyTo(alice(), "upl_c", dst)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]files.Written{{Path: "bin/run.sh", Size: int64(len(content)), SHA256: sha([]byte(content))}}, ws); diff != "" {
		t.Fatalf("copied (-want +got):\n%s", diff)
	}
	b, err := os.ReadFile(filepath.Join(dir, "bin", "run.sh"))
	if err != nil || string(b) != content {
		t.Fatalf("copied file: %q %v", b, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "bin", "run.sh")); st.Mode().Perm() != 0o755 {
		t.Fatalf("copied mode %v, want 0755", st.Mode().Perm())
	}
	if _, err := h.Store.CopyTo(alice(), "upl_c", dst); !errors.Is(err, files.ErrExists) {
		t.Fatalf("a second copy: %v, want ErrExists (nothing is overwritten)", err)
	}
	_, err = h.Store.CopyTo(alice(), "upl_none", dst)
	wantNotFound(t, "copy of an unknown item", "upl_none", err)
}

func testKeepHostile(t *testing.T, h *harness) {
	src := hostileRoot(t)
	now := h.clock.now()
	it, err := h.Store.Keep(alice(), "exec_1", src, []string{"sub/deep.txt", "ok.txt", "passwd", "otherdir/secret.txt", "fifo", "hardlink", "missing.txt"})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range it.Files {
		kept = append(kept, e.Path)
	}
	if diff := cmp.Diff([]string{"ok.txt", "sub/deep.txt"}, kept); diff != "" {
		t.Fatalf("kept (-want +got):\n%s\nskipped %q", diff, it.Skipped)
	}
	if len(it.Skipped) != 5 || it.Bytes != 8 || it.Owner != "alice" || !it.Created.Equal(now) {
		t.Fatalf("item %+v", it)
	}
	if it.Files[0].Mode != 0o640 {
		t.Fatalf("ok.txt kept with mode %v, want 0640", it.Files[0].Mode)
	}
	for p, want := range map[string]string{"ok.txt": "fine", "sub/deep.txt": "deep"} {
		got, _, err := h.Store.Read(alice(), "exec_1", p, 0, 0, 100)
		if err != nil || string(got) != want {
			t.Fatalf("read %s = %q %v", p, got, err)
		}
	}
	for _, p := range []string{"passwd", "otherdir/secret.txt", "hardlink"} {
		if _, _, err := h.Store.Read(alice(), "exec_1", p, 0, 0, 100); !errors.Is(err, files.ErrNotFound) {
			t.Fatalf("skipped %s is readable: %v", p, err)
		}
	}
	dst, dir := emptyRoot(t)
	if _, err := h.Store.CopyTo(alice(), "exec_1", dst); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "ok.txt")); err != nil || st.Mode().Perm() != 0o640 {
		t.Fatalf("copied ok.txt: %v %v", st, err)
	}
}

func testList(t *testing.T, h *harness) {
	for _, id := range []string{"upl_a", "exec_b", "upl_c"} {
		put(t, h.Store, alice(), id, "f.txt", id)
		h.clock.add(time.Second)
	}
	put(t, h.Store, bob(), "upl_d", "f.txt", "d")
	if diff := cmp.Diff([]string{"upl_c", "exec_b", "upl_a"}, ids(h.Store.List(alice()))); diff != "" {
		t.Fatalf("alice's list (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"upl_d"}, ids(h.Store.List(bob()))); diff != "" {
		t.Fatalf("bob's list (-want +got):\n%s", diff)
	}
	l := h.Store.List(alice())
	if len(l[0].Files) != 1 || l[0].Files[0].Path != "f.txt" || l[0].Bytes != 5 {
		t.Fatalf("listed item %+v", l[0])
	}
}

func testOwners(t *testing.T, h *harness) {
	put(t, h.Store, alice(), "upl_a", "in/data.bin", "xyz")
	_, err := h.Store.Get(bob(), "upl_a")
	wantNotFound(t, "bob's get", "upl_a", err)
	_, _, err = h.Store.Read(bob(), "upl_a", "in/data.bin", 0, 0, 10)
	wantNotFound(t, "bob's read", "upl_a", err)
	dst, dir := emptyRoot(t)
	_, err = h.Store.CopyTo(bob(), "upl_a", dst)
	wantNotFound(t, "bob's copy", "upl_a", err)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("bob's copy wrote %d entries", len(ents))
	}
	if n := len(h.Store.List(bob())); n != 0 {
		t.Fatalf("bob lists %d items", n)
	}
	if _, _, err := h.Store.Put(bob(), "upl_a", "x", bytes.NewReader(nil), files.WriteOptions{}); err == nil {
		t.Fatal("bob replaced alice's item")
	}
	if got, _, err := h.Store.Read(alice(), "upl_a", "in/data.bin", 0, 0, 10); err != nil || string(got) != "xyz" {
		t.Fatalf("alice's read: %q %v", got, err)
	}
}
