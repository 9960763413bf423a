package proc

import (
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/codexec/codexec/internal/instance"
)

// Run markers (subprocess mode). A subprocess run has no cgroup or
// namespace that holds all it starts: a daemon that calls setsid and forks
// twice leaves the run's process group, and when the server is killed it is
// re-parented to init and lives on. What it keeps is its environment, so
// every process a subprocess run starts carries RunMarkerKey=<server
// name>/<run> in /proc/<pid>/environ (a program that execs with a cleared
// environment drops it; its process group may still be found through its
// marked leader). While the server lives, a run's marked orphans are killed
// when it ends; a server starting kills every marked process
// whose server is gone (sweepDeadRuns), so nothing a run started survives
// the next start.

// RunMarkerKey is the environment variable that marks a subprocess run's
// processes. Its value names the server and the run; it carries no secret.
const RunMarkerKey = "CODEXEC_RUN"

// markerSeq numbers markers, so two runs of one name never share one.
var markerSeq atomic.Int64

// NewRunMarker returns a fresh marker ("KEY=VALUE") for a run named id.
func NewRunMarker(id string) string {
	return RunMarkerKey + "=" + instance.Self() + "/" + markerName(id) + "-" + strconv.FormatInt(markerSeq.Add(1), 10)
}

// markerName keeps the characters of id that are safe in names.
func markerName(id string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, id)
}

// MarkedEnv is env without any marker of its own, plus marker.
func MarkedEnv(env []string, marker string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, RunMarkerKey+"=")
	})
	return append(out, marker)
}

// markerServer returns the server name in a marker's value, if any.
func markerServer(value string) (string, bool) {
	i := strings.IndexByte(value, '/')
	if i <= 0 {
		return "", false
	}
	return value[:i], true
}

var deadRunsSweep sync.Once

// SweepDeadRunsOnce runs sweepDeadRuns the first time a backend is made in
// this process (every backend calls it), whatever the mode: a server restarted in another mode still
// removes what its subprocess runs left.
func SweepDeadRunsOnce() {
	deadRunsSweep.Do(func() {
		if n := sweepDeadRuns(); n > 0 {
			slog.Info("killed processes left by runs of earlier codexec servers", "count", n)
		}
	})
}

// sweepDeadRuns kills every process whose run marker names a server that is
// gone, with the process groups such processes lead, and returns how many
// processes it found. It repeats until a scan finds none, as processes may
// fork while it works.
func sweepDeadRuns() int {
	total := 0
	for round := 0; round < 20; round++ {
		found := deadRunProcesses()
		if len(found) == 0 {
			break
		}
		total += len(found)
		own := syscall.Getpgrp()
		for pid := range found {
			if _, pgid := State(pid); pgid == pid && pgid != own {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return total
}

// deadRunProcesses scans /proc for processes marked by runs of dead
// servers. Servers are judged once per scan.
func deadRunProcesses() map[int]bool {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	dead := map[string]bool{}
	found := map[int]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		v, ok := environValue(pid, RunMarkerKey)
		if !ok {
			continue
		}
		server, ok := markerServer(v)
		if !ok {
			continue
		}
		d, judged := dead[server]
		if !judged {
			d = instance.Dead(server)
			dead[server] = d
		}
		if d {
			found[pid] = true
		}
	}
	return found
}

// environValue returns the value of key in the environment pid started
// with.
func environValue(pid int, key string) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return "", false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}
