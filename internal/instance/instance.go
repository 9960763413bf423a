// Package instance names this server process among every codexec server
// that has run on the host, and tells whether the server behind such a name
// is gone. What a server leaves on the host — cgroups, containers, processes
// of runs, journals of work in flight — carries its name, so that the next
// server to start can remove what a killed one left, and only that: a server
// sharing the host (or the data directory) is alive, and its things are
// spared.
//
// A name is "<pid>-<start>-<boot>-<pidns>": the server's pid, its start time
// in clock ticks since boot (/proc/<pid>/stat), the first 8 characters of
// the kernel's boot id and the inode of its pid namespace. A pid alone would
// be reused by an unrelated process; the pid with its start time names one
// process for the life of one boot, but only within one pid namespace: two
// containers, two pods or a container and the host see different processes
// behind the same pid. So a server judges by pid only the names of its own
// pid namespace; a name from another one is Unknown (see Judge), and callers
// needing a proof there use a lock that its server holds while it lives.
//
// Names of earlier versions ("<pid>-<start>-<boot>", no namespace) are
// judged Gone only when their boot is over: within the boot they could name
// a live server of any pid namespace.
package instance

import (
	"strconv"
	"strings"
	"sync"
)

// Self returns this process's name. It is computed once.
func Self() string {
	selfOnce.Do(func() { self = Of(pidSelf()) })
	return self
}

var (
	selfOnce sync.Once
	self     string
)

// Verdict is what can be proved about the server behind a name.
type Verdict int

const (
	// Unknown: nothing can be proved (a server of another pid namespace,
	// a name of an earlier version, a malformed or unreadable one). Callers
	// spare its things.
	Unknown Verdict = iota
	// Running: the server runs (this one included).
	Running
	// Gone: the server is provably gone: its boot is over, or it was of
	// this pid namespace and no process with its pid and start time runs.
	Gone
)

// Judge tells whether the server named id runs, is gone, or cannot be
// judged from here.
func Judge(id string) Verdict {
	n, ok := parse(id)
	if !ok {
		return Unknown
	}
	curBoot, ok := bootID()
	if !ok {
		return Unknown
	}
	if n.boot != curBoot {
		return Gone
	}
	if ns, ok := pidNS(); !ok || n.pidns == 0 || n.pidns != ns {
		return Unknown
	}
	st, state := startTime(n.pid)
	switch {
	case state == procGone || state == procFound && st != n.start:
		return Gone
	case state == procFound:
		return Running
	}
	return Unknown
}

// Dead reports whether the server named id is provably gone (Judge is
// Gone): callers only ever remove what a dead server left, so doubt spares
// it.
func Dead(id string) bool { return Judge(id) == Gone }

// Foreign reports whether id is a well-formed name of this boot from
// another pid namespace: a server that, while it lives, holds the locks its
// callers define (a journal's, a cgroup directory's), so a free lock proves
// it gone once any set-up window is past.
func Foreign(id string) bool {
	n, ok := parse(id)
	if !ok || n.pidns == 0 {
		return false
	}
	boot, okb := bootID()
	ns, okn := pidNS()
	return okb && okn && n.boot == boot && n.pidns != ns
}

// Local reports whether id is a well-formed name of a server of this pid
// namespace: the only names whose pid means a process here.
func Local(id string) bool {
	n, ok := parse(id)
	ns, okn := pidNS()
	return ok && okn && n.pidns != 0 && n.pidns == ns
}

// Of returns the name of the running process pid of this pid namespace
// (Self is Of of this process). When its start time, the boot id or the pid
// namespace cannot be read the name is malformed on purpose
// ("<pid>-0-unknown"): nothing will ever judge it dead.
func Of(pid int) string {
	st, state := startTime(pid)
	boot, okb := bootID()
	ns, okn := pidNS()
	if state != procFound || !okb || !okn {
		return strconv.Itoa(pid) + "-0-unknown"
	}
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(st, 10) + "-" + boot + "-" + strconv.FormatUint(ns, 10)
}

// Cut splits s, a name followed by "-" and more (a directory named after
// its server), into the name and the rest. Both forms of name are
// recognised; ok is false when s starts with neither.
func Cut(s string) (id, rest string, ok bool) {
	f := strings.SplitN(s, "-", 5)
	for n := 4; n >= 3; n-- {
		if len(f) > n {
			if id = strings.Join(f[:n], "-"); validName(id) {
				return id, strings.Join(f[n:], "-"), true
			}
		}
	}
	return "", "", false
}

func validName(id string) bool { _, ok := parse(id); return ok }

// name is a parsed name; pidns is 0 in a name of an earlier version.
type name struct {
	pid   int
	start uint64
	boot  string
	pidns uint64
}

func parse(id string) (name, bool) {
	f := strings.Split(id, "-")
	if len(f) != 3 && len(f) != 4 || len(f[2]) != bootLen {
		return name{}, false
	}
	n := name{boot: f[2]}
	var err error
	if n.pid, err = strconv.Atoi(f[0]); err != nil || n.pid <= 0 {
		return name{}, false
	}
	if n.start, err = strconv.ParseUint(f[1], 10, 64); err != nil || n.start == 0 {
		return name{}, false
	}
	if len(f) == 4 {
		if n.pidns, err = strconv.ParseUint(f[3], 10, 64); err != nil || n.pidns == 0 {
			return name{}, false
		}
	}
	return n, true
}

// bootLen is how much of the boot id a name keeps.
const bootLen = 8

// procState is what reading a process's start time found.
type procState int

const (
	procFound   procState = iota // the process runs; the start time is valid
	procGone                     // no such process
	procUnknown                  // it could not be read
)
