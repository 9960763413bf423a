package cgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/instance"
)

// Swept counts what Sweep did.
type Swept struct {
	// Removed is how many groups it removed.
	Removed int
	// Spared is how many groups of servers it could not prove gone, or of
	// servers of other pid namespaces, it left because processes run in
	// them.
	Spared int
}

// grace is how long a directory must have been left unchanged (its mtime)
// before a sweep that cannot ask its server removes it: far longer than a
// server takes between making a directory and locking it or placing a
// process in it. A directory's mtime is never older than the directory.
const grace = 10 * time.Minute

// Sweep removes the groups left behind by codexec servers that are gone,
// and never a live server's, whatever pid namespace either is in (two pods
// of a node, two containers, a container and the host share one cgroup
// tree). It returns what it removed and spared. Per server directory (see
// ownerSuffix):
//
//   - a server of this pid namespace that is gone (package instance: its pid
//     and start time no longer run): every process of its groups is killed
//     and the groups removed;
//   - this server, a live one of this namespace, or any server holding its
//     directory's lock: nothing is touched;
//   - a server of another pid namespace (or a name that cannot be judged)
//     whose lock is free: it is gone if its directory is older than grace
//     (a live server locks it right after making it). Its processes are
//     never signalled, as their pids mean other processes here: only its
//     empty groups are removed (rmdir, which the kernel refuses for a group
//     with processes) and then its directory.
//
// Groups of earlier versions (directly in the parent, "<name>-<pid>") carry
// no namespace: they are never signalled; one is removed when its pid runs
// no process here, it is empty and its mtime is older than grace.
func Sweep(info Info) Swept {
	if info.Version == 0 {
		return Swept{}
	}
	return sweepIn(parents(info), info.Version == 2, time.Now())
}

// parents lists the directories holding codexec's groups, the one holding
// the servers' locks first (v1: in the order of v1Controllers). By default
// they are the directory groupsDir below the root (v2) or below the
// server's own group in each hierarchy (v1; cpuacct's last, where info
// lists it).
func parents(info Info) []string {
	if info.bases != nil {
		return info.bases
	}
	if info.Version == 2 {
		return []string{filepath.Join(Root, groupsDir)}
	}
	var out []string
	for _, c := range v1Controllers {
		out = append(out, filepath.Join(Root, c, ownPath(c), groupsDir))
	}
	if contains(info.Controllers, acctController) {
		out = append(out, filepath.Join(Root, acctController, ownPath(acctController), groupsDir))
	}
	return out
}

// verdict is what a sweep does with one server's groups.
type verdict int

const (
	keep        verdict = iota
	kill                // a gone server of this pid namespace
	removeEmpty         // a gone server of another pid namespace
	removeOld           // nothing proved: the age rule of each directory
)

type sweeper struct {
	bases    []string // bases[0] holds the locks
	v2       bool
	now      time.Time
	verdicts map[string]verdict
	Swept
}

// sweepIn sweeps the parent directories bases (one per hierarchy, the
// lock hierarchy first).
func sweepIn(bases []string, v2 bool, now time.Time) Swept {
	s := &sweeper{bases: bases, v2: v2, now: now, verdicts: map[string]verdict{}}
	// v1: the freezer first, so frozen leftovers are thawed and die.
	for i := len(bases) - 1; i >= 0; i-- {
		entries, _ := os.ReadDir(bases[i])
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(bases[i], e.Name())
			if id, ok := strings.CutSuffix(e.Name(), ownerSuffix); ok {
				s.server(dir, s.judge(id))
			} else if s.legacyUnowned(e.Name()) {
				s.removeIfOld(dir)
			}
		}
	}
	return s.Swept
}

// judge decides, once per server, what to do with its groups.
func (s *sweeper) judge(id string) verdict {
	if v, ok := s.verdicts[id]; ok {
		return v
	}
	v := s.judgeServer(id)
	s.verdicts[id] = v
	return v
}

func (s *sweeper) judgeServer(id string) verdict {
	if instance.Local(id) {
		switch instance.Judge(id) {
		case instance.Gone:
			return kill
		case instance.Running:
			return keep
		}
	}
	lockDir := filepath.Join(s.bases[0], id+ownerSuffix)
	held, ok := lockHeld(lockDir)
	switch {
	case held:
		return keep
	case !ok:
		return removeOld // no lock directory: no proof either way
	case s.old(lockDir):
		return removeEmpty
	}
	return keep // perhaps just made and not yet locked
}

// server applies v to the server directory dir and its groups.
func (s *sweeper) server(dir string, v verdict) {
	if v == keep {
		return
	}
	groups, _ := os.ReadDir(dir)
	for _, g := range groups {
		if !g.IsDir() {
			continue
		}
		gdir := filepath.Join(dir, g.Name())
		switch v {
		case kill:
			s.killGroup(gdir)
		case removeEmpty:
			s.removeEmptyGroup(gdir)
		case removeOld:
			s.removeIfOld(gdir)
		}
	}
	if v != removeOld || s.old(dir) {
		_ = syscall.Rmdir(dir) // refused while groups remain
	}
}

// killGroup kills every process of a gone server's group and removes it.
func (s *sweeper) killGroup(dir string) {
	g := &Group{dirs: []string{dir}, v2: s.v2}
	if s.v2 {
		_, _ = g.killV2()
	} else {
		g.Signal(syscall.SIGKILL)
		// A server killed in the middle of a v1 kill leaves its group
		// frozen: thaw it so the signals are delivered.
		if _, err := os.Stat(filepath.Join(dir, "freezer.state")); err == nil {
			_ = write(dir, "freezer.state", "THAWED")
		}
	}
	if rmdirRetry(dir, time.Now().Add(time.Second)) == nil {
		s.Removed++
	} else {
		s.Spared++
	}
}

// removeEmptyGroup removes dir unless processes run in it.
func (s *sweeper) removeEmptyGroup(dir string) {
	if err := syscall.Rmdir(dir); err == nil {
		s.Removed++
	} else if err == syscall.EBUSY {
		s.Spared++
	}
}

// removeIfOld removes dir if it is empty and older than grace.
func (s *sweeper) removeIfOld(dir string) {
	if s.old(dir) {
		s.removeEmptyGroup(dir)
	}
}

// old reports whether dir's mtime is older than grace. The kernel sets a
// cgroup directory's times when it makes (or reloads) its inode and when
// a group is made in it, so its mtime is never older than the directory.
func (s *sweeper) old(dir string) bool {
	fi, err := os.Stat(dir)
	return err == nil && s.now.Sub(fi.ModTime()) >= grace
}

// legacyUnowned reports whether name is a group of an earlier version
// ("<name>-<pid>") whose pid runs no process here. A running pid may be
// its live server (of this namespace) or an unrelated process; either way
// the group is left.
func (s *sweeper) legacyUnowned(name string) bool {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return false
	}
	pid, err := strconv.Atoi(name[i+1:])
	return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
}
