package instance

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

func pidSelf() int { return os.Getpid() }

// pidNS is the inode of this process's pid namespace. Namespace inodes are
// unique among the namespaces that exist at one time; a name also carries
// the pid's start time, so a reused inode cannot make an old name current.
var pidNS = sync.OnceValues(func() (uint64, bool) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &st); err != nil {
		return 0, false
	}
	return st.Ino, true
})

// bootID is the start of the kernel's boot id.
func bootID() (string, bool) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(b) < bootLen {
		return "", false
	}
	return string(b[:bootLen]), true
}

// startTime reads field 22 of /proc/<pid>/stat: the process's start time in
// clock ticks after boot.
func startTime(pid int) (uint64, procState) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, procGone
	}
	if err != nil {
		return 0, procUnknown
	}
	return parseStart(string(b))
}

// parseStart finds the start time in a stat line. The command name (field
// 2) is in parentheses and may hold spaces and parentheses itself, so the
// fields are counted from the last ')'.
func parseStart(stat string) (uint64, procState) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, procUnknown
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, procUnknown
	}
	st, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, procUnknown
	}
	return st, procFound
}
