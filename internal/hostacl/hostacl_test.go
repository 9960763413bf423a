package hostacl

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// grant writes the ACL earlier codexec versions gave uid on dir.
func grant(t *testing.T, dir string, uid int, extra ...entry) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	m := st.Mode
	acl := []entry{{tagUserObj, uint16(m >> 6 & 7), noID}, {tagUser, 7, uint32(uid)}}
	acl = append(acl, extra...)
	acl = append(acl, entry{tagGroupObj, uint16(m >> 3 & 7), noID}, entry{tagMask, 7, noID}, entry{tagOther, uint16(m & 7), noID})
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range acl {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	for _, name := range []string{xattrAccess, xattrDefault} {
		if err := unix.Setxattr(dir, name, b, 0); err != nil {
			t.Skipf("POSIX ACLs unavailable here: %v", err)
		}
	}
}

func TestScanAndRepair(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("setting ACLs for another user needs root")
	}
	root := cleanDir(t)
	for _, d := range []string{"ours/inherited", "theirs", "clean/deep/er"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	grant(t, filepath.Join(root, "ours"), 65534)
	// A directory created after the grant inherits the default ACL.
	if err := os.Mkdir(filepath.Join(root, "ours", "later"), 0o700); err != nil {
		t.Fatal(err)
	}
	grant(t, filepath.Join(root, "theirs"), 65534, entry{tagUser, 5, 1000}) // an operator's own entry too
	found, complete := Scan(root, Options{UID: 65534, MaxDepth: 8, MaxDirs: 100})
	got := map[string]bool{}
	for _, f := range found {
		rel, _ := filepath.Rel(root, f.Path)
		got[rel] = f.Ours
	}
	want := map[string]bool{"ours": true, "ours/later": true, "theirs": false}
	if diff := cmp.Diff(want, got); diff != "" || !complete {
		t.Fatalf("findings (-want +got):\n%s complete=%v", diff, complete)
	}
	for _, f := range found {
		err := Repair(f, 65534)
		if (err == nil) != f.Ours {
			t.Errorf("repair %s: %v (ours %v)", f.Path, err, f.Ours)
		}
	}
	for dir, mode := range map[string]uint32{"ours": 0o755, "ours/later": 0o700} {
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(root, dir), &st); err != nil || uint32(st.Mode)&0o777 != mode {
			t.Errorf("repaired %s mode %o, want %o (group bits restored)", dir, st.Mode&0o777, mode)
		}
	}
	if f, ok := examine(filepath.Join(root, "ours"), 65534); ok {
		t.Errorf("repaired dir still has ACLs: %+v", f)
	}
	if _, ok := examine(filepath.Join(root, "theirs"), 65534); !ok {
		t.Error("a foreign ACL was removed")
	}
	if _, complete := Scan(root, Options{UID: 65534, MaxDepth: 1, MaxDirs: 100}); complete {
		t.Error("a depth-bounded scan claims to be complete")
	}
}

// cleanDir is a temporary directory without ACLs, whatever the host's /tmp
// inherited from earlier versions.
func cleanDir(t *testing.T) string {
	dir := t.TempDir()
	for _, name := range []string{xattrDefault, xattrAccess} {
		_ = unix.Removexattr(dir, name)
	}
	return dir
}
