package confine

import (
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// workers is how many threads serve one identity: file operations on a
// sandbox's behalf are short (an open, a directory walk), so a few threads
// carry the load of many concurrent runs.
const workers = 4

// A pool is a set of goroutines, each locked for its lifetime to an OS
// thread whose file-system ids are switched to the identity. Switching
// once per thread instead of per call keeps an operation at a channel
// hand-off (a fresh thread per call costs ~0.1 ms).
type pool struct {
	reqs chan request
}

type request struct {
	fn   func() error
	done chan error
}

var pools sync.Map // Identity → *pool

// doAs runs fn on one of id's threads.
func doAs(id Identity, fn func() error) error {
	p, ok := pools.Load(id)
	if !ok {
		p, _ = pools.LoadOrStore(id, startPool(id))
	}
	r := request{fn: fn, done: make(chan error, 1)}
	p.(*pool).reqs <- r
	return <-r.done
}

// startPool starts id's threads. A thread whose switch fails answers every
// request with that error instead of running it.
func startPool(id Identity) *pool {
	p := &pool{reqs: make(chan request)}
	for range workers {
		go p.serve(id)
	}
	return p
}

func (p *pool) serve(id Identity) {
	// Never unlocked: the thread's credentials differ from the process's,
	// so no other goroutine may ever run on it.
	runtime.LockOSThread()
	err := switchTo(id)
	for r := range p.reqs {
		if err != nil {
			r.done <- err
			continue
		}
		r.done <- r.fn()
	}
}

// switchTo sets the calling thread's supplementary groups to none and its
// fsuid/fsgid to id. x/sys/unix's Setgroups, Setfsuid and Setfsgid act on
// the calling thread only (package syscall's change every thread).
// Changing fsuid from 0 also clears CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH,
// CAP_FOWNER and CAP_CHOWN from the thread's effective set, so permission
// checks are the sandbox user's.
func switchTo(id Identity) error {
	if err := unix.Setgroups(nil); err != nil && !ownGroups(id, err) {
		return fmt.Errorf("confine: drop groups: %w", err)
	}
	_ = unix.Setfsgid(id.gid)
	_ = unix.Setfsuid(id.uid)
	// setfsuid reports no error: read the ids back (-1 changes nothing).
	uid, _ := unix.SetfsuidRetUid(-1)
	gid, _ := unix.SetfsgidRetGid(-1)
	if uid != id.uid || gid != id.gid {
		return fmt.Errorf("confine: cannot act as uid %d gid %d (the server is not root?)", id.uid, id.gid)
	}
	return dropEffectiveCaps()
}

// ownGroups reports whether a failed setgroups may be ignored: a server
// without root, in a user namespace of its own (package rootless), acting
// as its own user, where the kernel denies setgroups. Its programs keep
// the user's groups as well, so acting with them is acting with the
// program's rights.
func ownGroups(id Identity, err error) bool {
	return err == unix.EPERM && id.uid == unix.Getuid() && id.uid != 0
}

// dropEffectiveCaps empties the calling thread's effective capability set.
// A switch to fsuid 0 (acting with the rights of a directory root owns)
// keeps root's overriding capabilities, so the owner's permission bits
// would not be checked at all; without any, root is checked like every
// owner. The thread is never reused for anything else (pool.serve).
func dropEffectiveCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("confine: read capabilities: %w", err)
	}
	data[0].Effective, data[1].Effective = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("confine: drop capabilities: %w", err)
	}
	return nil
}
