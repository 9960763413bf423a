package rootless

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// innerEnv marks the re-executed server and carries the host ids it runs
// as ("UID:GID"). It is removed from the environment at once, so nothing
// the server starts inherits it.
const innerEnv = "CODEXEC_ROOTLESS_INNER"

// IDs are the host user and group the rootless server runs as.
type IDs struct{ UID, GID int }

// inside is read once, before anything else reads the environment.
var inside, insideOK = readInner()

func readInner() (IDs, bool) {
	v, ok := os.LookupEnv(innerEnv)
	if !ok {
		return IDs{}, false
	}
	_ = os.Unsetenv(innerEnv)
	u, g, ok := strings.Cut(v, ":")
	uid, err1 := strconv.Atoi(u)
	gid, err2 := strconv.Atoi(g)
	if !ok || err1 != nil || err2 != nil || uid != os.Getuid() {
		return IDs{}, false
	}
	return IDs{UID: uid, GID: gid}, true
}

// Inside reports whether this process is the server re-executed in its own
// user namespace, and the ids it runs as.
func Inside() (IDs, bool) { return inside, insideOK }

// sysctls that switch unprivileged user namespaces off, with the value
// that does and the fix to print.
var sysctls = []struct{ file, bad, fix string }{
	{"/proc/sys/user/max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"},
	{"/proc/sys/kernel/unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"},
	{"/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1",
		"allow bubblewrap and codexec to make user namespaces with an AppArmor profile (see docs/sandbox.md), or sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"},
}

// ErrRestricted means the host switches unprivileged user namespaces off;
// its text names the setting and the fix.
var ErrRestricted = errors.New("unprivileged user namespaces are disabled")

// userNamespaces reports whether the host lets normal users make user
// namespaces, reading the sysctls at root (tests pass a directory).
func userNamespaces(root string) error {
	for _, s := range sysctls {
		b, err := os.ReadFile(root + s.file)
		if err == nil && strings.TrimSpace(string(b)) == s.bad {
			return fmt.Errorf("%w (%s = %s); fix: %s", ErrRestricted, s.file, s.bad, s.fix)
		}
	}
	return nil
}

// overflowUID is the id the kernel shows for owners a user namespace does
// not map (/proc/sys/kernel/overflowuid, 65534 unless changed).
var overflowUID = readOverflowUID()

func readOverflowUID() int {
	b, err := os.ReadFile("/proc/sys/kernel/overflowuid")
	if n, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil {
		return n
	}
	return 65534
}

// Unmapped reports whether uid, as this process sees a file's owner, is
// the stand-in for an account its user namespace does not map: inside
// (Inside), files of every account but the user show as that id, so it
// names no one.
func Unmapped(uid int) bool { return insideOK && uid == overflowUID }

// OwnerText describes a file owner uid for users: "owner uid N", or, for
// an owner the server cannot name from its user namespace, "owned by
// another account".
func OwnerText(uid int) string {
	if Unmapped(uid) {
		return "owned by another account"
	}
	return "owner uid " + strconv.Itoa(uid)
}
