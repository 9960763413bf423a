package files

import (
	"time"

	"golang.org/x/sys/unix"
)

// Stamp identifies the state of a root's own directory entry: its inode
// and its change time (ctime), which the kernel moves on every entry
// created, removed or renamed in it and on every change to the
// directory's attributes; no file-system call, however privileged, sets
// it back. Two equal stamps taken at different moments mean the directory
// did not change between them, provided the first was Quiet (see Quiet).
type Stamp struct {
	dev, ino     uint64
	ctime, mtime int64 // nanoseconds
	nlink        uint64
}

// Stamp fstats the root's directory fd, with the server's rights: no path
// is resolved, so nothing the sandbox controls is followed. The zero
// Stamp is returned on error and equals no real one.
func (r *Root) Stamp() Stamp {
	var st unix.Stat_t
	if unix.Fstat(r.fd, &st) != nil {
		return Stamp{}
	}
	return Stamp{dev: uint64(st.Dev), ino: st.Ino, ctime: st.Ctim.Nano(), mtime: st.Mtim.Nano(), nlink: uint64(st.Nlink)}
}

// QuietFor is how long before a stamp was taken its directory must last
// have changed for the stamp to be Quiet. File-system timestamps come from
// a coarse clock (one scheduler tick, at most 10 ms, behind the real
// time), so a change made soon after a recent one can leave the ctime as
// it was; a change made after a stamp whose ctime is older than this
// always moves it. Ten ticks leave room for a small step of the system
// clock, which file modification times (artifacts) rely on as well.
const QuietFor = 100 * time.Millisecond

// Quiet reports whether s, taken at the time at, saw a directory that had
// not changed for QuietFor: every later change to it then gives a
// different stamp.
func (s Stamp) Quiet(at time.Time) bool {
	return s.ino != 0 && s.ctime < at.Add(-QuietFor).UnixNano()
}
