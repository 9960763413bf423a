// Package instance names this server process among every codexec server
// that has run on the host, and tells whether the server behind such a name
// is gone. What a server leaves on the host — containers, processes of runs,
// journals of work in flight — carries its name, so that the next server to
// start can remove what a killed one left, and only that: a server sharing
// the host (or the data directory) is alive, and its things are spared.
//
// A name is "<pid>-<start>-<boot>": the server's pid, its start time in
// clock ticks since boot (/proc/<pid>/stat) and the first 8 characters of the
// kernel's boot id. A pid alone would be reused by an unrelated process; the
// pid with its start time names one process for the life of one boot.
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

// Dead reports whether the server named id is provably gone: its boot is
// not the current one, or no process with its pid and start time runs. A
// malformed id, or one whose state cannot be read, is not dead: callers only
// ever remove what a dead server left, so doubt spares it.
func Dead(id string) bool {
	pid, start, boot, ok := parse(id)
	if !ok {
		return false
	}
	curBoot, ok := bootID()
	if !ok {
		return false
	}
	if boot != curBoot {
		return true
	}
	st, state := startTime(pid)
	switch state {
	case procGone:
		return true
	case procFound:
		return st != start
	}
	return false
}

// Alive reports whether id names a running server (the opposite of Dead for
// well-formed names; false for malformed ones).
func Alive(id string) bool {
	_, _, _, ok := parse(id)
	return ok && !Dead(id)
}

// Of returns the name of the running process pid (Self is Of of this
// process). When its start time or the boot id cannot be read the name is
// malformed on purpose ("<pid>-0-unknown"): nothing will ever judge it dead.
func Of(pid int) string {
	st, state := startTime(pid)
	boot, ok := bootID()
	if state != procFound || !ok {
		return strconv.Itoa(pid) + "-0-unknown"
	}
	return strconv.Itoa(pid) + "-" + strconv.FormatUint(st, 10) + "-" + boot
}

func parse(id string) (pid int, start uint64, boot string, ok bool) {
	f := strings.Split(id, "-")
	if len(f) != 3 || len(f[2]) != bootLen {
		return 0, 0, "", false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return 0, 0, "", false
	}
	start, err = strconv.ParseUint(f[1], 10, 64)
	if err != nil || start == 0 {
		return 0, 0, "", false
	}
	return pid, start, f[2], true
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
