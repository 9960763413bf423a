package proc

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The server may be a child subreaper (subprocess mode): orphaned
// descendants of a run are re-parented to it, so codexec can find and kill
// daemons that escaped a run's process group, and must reap the zombies they
// leave. To tell such orphans from children the server started on purpose,
// every child process of the server must be started through StartTracked.
var tracked = struct {
	sync.Mutex
	pids map[int]bool
}{pids: map[int]bool{}}

// StartTracked starts cmd and records its pid as a deliberate child of the
// server, then removes it when cmd.Wait returns via the returned wait
// function. Every package that starts a host process (installers, container
// CLIs) must use it instead of cmd.Start so the orphan sweeper of subprocess
// mode never reaps it.
func StartTracked(cmd *exec.Cmd) (wait func() error, err error) {
	tracked.Lock()
	err = cmd.Start()
	if err == nil {
		tracked.pids[cmd.Process.Pid] = true
	}
	tracked.Unlock()
	if err != nil {
		return nil, err
	}
	pid := cmd.Process.Pid
	return func() error {
		err := cmd.Wait()
		tracked.Lock()
		delete(tracked.pids, pid)
		tracked.Unlock()
		return err
	}, nil
}

// RunTracked runs cmd to completion through StartTracked.
func RunTracked(cmd *exec.Cmd) error {
	wait, err := StartTracked(cmd)
	if err != nil {
		return err
	}
	return wait()
}

// SweepOrphans kills every untracked child of the server whose environment
// carries marker (e.g. "HOME=/path/of/workspace") together with its process
// group, and reaps untracked zombies. It repeats because killing an orphan
// re-parents its own children to the server. It returns how many processes
// it killed.
func SweepOrphans(marker string) int {
	killed := 0
	for round := 0; round < 50; round++ {
		n := sweepOnce(marker)
		killed += n
		if n == 0 {
			break
		}
	}
	return killed
}

func sweepOnce(marker string) int {
	tracked.Lock()
	defer tracked.Unlock()
	n := 0
	for _, pid := range ownChildren() {
		if tracked.pids[pid] {
			continue
		}
		state, pgid := State(pid)
		if state == 'Z' {
			reap(pid)
			continue
		}
		if environHas(pid, marker) {
			if pgid > 1 && pgid != syscall.Getpgrp() {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			reap(pid)
			n++
		}
	}
	return n
}

func reap(pid int) {
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
}

// ownChildren lists the children of this process's main thread. Orphans
// re-parented to a subreaper are adopted by the thread group leader (the
// kernel picks the first live thread, starting with the leader, which in Go
// never exits), so one read finds every orphan; children the server forked
// from other threads may be missing, which is fine: those are tracked.
func ownChildren() []int {
	b, err := os.ReadFile(childrenFile)
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

var childrenFile = "/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children"

// State returns the state letter (R, S, Z, …) and process group of pid;
// 0, 0 if it is gone.
func State(pid int) (byte, int) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 3 {
		return 0, 0
	}
	pgid, _ := strconv.Atoi(f[2])
	return f[0][0], pgid
}

func environHas(pid int, marker string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if kv == marker {
			return true
		}
	}
	return false
}

// ResidentBytes is a process's resident memory (VmRSS), or 0.
func ResidentBytes(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
