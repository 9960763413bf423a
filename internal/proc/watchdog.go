package proc

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/codexec/codexec/internal/instance"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// The server's watchdog: one child per server (helper.RunWatchdog) that
// kills the server's runs when the server dies, even by SIGKILL, within
// moments instead of at the next start. The server tells it the process
// groups of runs that live outside any sandbox (subprocess runs and warm
// runners, package installs), its control groups (namespace mode) and the
// container label of docker mode over
// a pipe whose write end only the server holds; when that pipe ends the
// watchdog kills those groups, every process carrying one of the server's
// run markers (runmark.go) or in its control groups, and removes the
// labelled containers. Namespace mode's sandboxes mostly need none of it:
// bubblewrap dies with the server (--die-with-parent) and the kernel kills
// what its pid namespace holds; the control groups catch a sandbox whose
// launcher was between steps when the server died.
// The sweep at the next start stays as a second line.
//
// Registrations are kept here as well, so that a watchdog that died (a
// program of a subprocess run can kill it) is started again with all of
// them.
var watch = struct {
	sync.Mutex
	w          *os.File // nil while no watchdog runs
	started    bool     // StartWatchdog was called and StopWatchdog not
	groups     map[int]bool
	containers []string // registration lines of containers and cgroups
}{groups: map[int]bool{}}

// StartWatchdog starts the server's watchdog (only the server does: a test
// binary registering groups without one is fine). It returns an error if
// the watchdog cannot be started; runs then outlive a killed server until
// the next start, as the caller should say.
func StartWatchdog() error {
	watch.Lock()
	defer watch.Unlock()
	if watch.started {
		return nil
	}
	if err := startWatchdogLocked(); err != nil {
		return err
	}
	watch.started = true
	return nil
}

// StopWatchdog closes the server's end of the watchdog's pipe, as the
// server's exit would: the watchdog kills what is still registered (and
// marked), then exits. Call it once the server has ended its runs and
// removed its containers itself: the watchdog leaves containers to the
// next start then, so that the server's exit is not held up.
func StopWatchdog() {
	watch.Lock()
	defer watch.Unlock()
	watch.started = false
	if watch.w != nil {
		sendLocked("clean\n")
		_ = watch.w.Close()
		watch.w = nil
	}
}

// startWatchdogLocked starts a watchdog and sends it every registration.
func startWatchdogLocked() (retErr error) {
	exe, err := helper.Exe()
	if err != nil {
		return err
	}
	r, w, err := os.Pipe() // close-on-exec: no run inherits the write end
	if err != nil {
		return err
	}
	defer r.Close()
	defer func() {
		if retErr != nil {
			_ = w.Close()
		}
	}()
	cmd := exec.Command(exe, helper.WatchdogCommand, RunMarkerKey+"="+instance.Self()+"/")
	cmd.Stdin, cmd.Stderr = r, os.Stderr
	// Its own process group: a signal to the server's group (a terminal's
	// ^C) must not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	wait, err := StartTracked(cmd)
	if err != nil {
		return fmt.Errorf("start the watchdog %s: %w", exe, err)
	}
	var msg []byte
	for pg := range watch.groups {
		msg = append(msg, "group "+strconv.Itoa(pg)+"\n"...)
	}
	for _, c := range watch.containers {
		msg = append(msg, c...)
	}
	if _, err := w.Write(msg); err != nil {
		return errors.Join(err, cmd.Process.Kill(), wait())
	}
	watch.w = w
	go watchdogExited(w, wait)
	return nil
}

// watchdogExited waits for the watchdog on pipe w and starts another if it
// died while the server still wants one.
func watchdogExited(w *os.File, wait func() error) {
	err := wait()
	for {
		watch.Lock()
		if !watch.started || watch.w != w {
			watch.Unlock()
			return
		}
		slog.Warn("the watchdog that ends runs when the server dies exited; starting another", "err", err)
		_ = w.Close()
		watch.w, w = nil, nil
		err = startWatchdogLocked()
		watch.Unlock()
		if err == nil {
			return
		}
		slog.Warn("could not start the watchdog again; runs would outlive a killed server until the next start", "err", err)
		time.Sleep(5 * time.Second)
	}
}

// GuardGroup registers the process group pgid of a run that lives outside
// any sandbox: the watchdog kills it if the server dies. UnguardGroup it
// once the run is killed and reaped, before its pgid can be reused.
func GuardGroup(pgid int) {
	if pgid <= 1 {
		return
	}
	watch.Lock()
	defer watch.Unlock()
	watch.groups[pgid] = true
	sendLocked("group " + strconv.Itoa(pgid) + "\n")
}

// UnguardGroup removes the registration of GuardGroup.
func UnguardGroup(pgid int) {
	watch.Lock()
	defer watch.Unlock()
	if !watch.groups[pgid] {
		return
	}
	delete(watch.groups, pgid)
	sendLocked("ungroup " + strconv.Itoa(pgid) + "\n")
}

// GuardCgroup registers a control group directory of the server (one per
// hierarchy): the watchdog kills every process beneath it if the server
// dies, whatever parent-death signals did.
func GuardCgroup(dir string) { guardOnce("cgroup " + strconv.Quote(dir) + "\n") }

// guardOnce sends a registration of containers or control groups, once.
func guardOnce(line string) {
	watch.Lock()
	defer watch.Unlock()
	if slices.Contains(watch.containers, line) {
		return
	}
	watch.containers = append(watch.containers, line)
	sendLocked(line)
}

// GuardContainers registers the containers labelled label (KEY=VALUE),
// managed through the docker-compatible CLI cli: the watchdog removes them
// if the server dies.
func GuardContainers(cli, label string) {
	guardOnce("containers " + strconv.Quote(cli) + " " + strconv.Quote(label) + "\n")
}

// sendLocked writes a registration to the watchdog, if one runs. A failed
// write means the watchdog died: watchdogExited starts another with every
// registration.
func sendLocked(line string) {
	if watch.w != nil {
		_, _ = watch.w.WriteString(line)
	}
}
