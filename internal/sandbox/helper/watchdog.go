package helper

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The watchdog (RunWatchdog) is one long-lived child per server that ends
// the server's runs when the server dies, however it dies: a kill -9 or
// the OOM killer leave the server no chance to clean up, and neither a
// subprocess run's daemons nor a container (held by the engine, not by the
// CLI) die with it. It owns no run: it learns what to kill over its stdin,
// a pipe whose write end only the server holds (close-on-exec, so no run
// inherits it), and acts on the end of that pipe, which comes when the
// server exits by any means. Unlike a parent-death signal, the pipe cannot
// fire early (Go's parent-death signal follows the thread that forked) and
// leaves the watchdog alive to clean up.
//
// Its wire, one line per message, server to watchdog only:
//
//	group PGID               kill process group PGID when the server ends
//	ungroup PGID             no longer (the run ended and was cleaned up)
//	containers "CLI" "L=V"   remove the containers labelled L=V through the
//	                         docker-compatible CLI when the server ends
//
// Its one argument is the run marker prefix of the server's subprocess runs
// ("CODEXEC_RUN=<server>/", package proc): processes whose environment
// carries it are killed too, with the process groups they lead, so that a
// setsid'd double fork of a run goes as well.

// watchdogContainerTime bounds the removal of the server's containers.
const watchdogContainerTime = 30 * time.Second

// watchdog is what the server registered.
type watchdog struct {
	marker     string
	groups     map[int]bool
	containers map[[2]string]bool
}

// RunWatchdog is the body of `sandbox-watchdog MARKER_PREFIX`: it reads
// registrations until its stdin ends, then kills and removes what is
// registered and what carries the marker, and exits 0.
func RunWatchdog(args []string) int {
	if len(args) != 1 || !strings.HasSuffix(args[0], "/") {
		fmt.Fprintln(os.Stderr, "codexec sandbox-watchdog: usage: sandbox-watchdog MARKER_PREFIX (internal helper of codexec)")
		return 2
	}
	// Signals a terminal or a service manager sends the server's group or
	// session must not end the watchdog before the server: only the end of
	// its stdin does.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	w := &watchdog{marker: args[0], groups: map[int]bool{}, containers: map[[2]string]bool{}}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if err := w.apply(sc.Text()); err != nil {
			fmt.Fprintln(os.Stderr, "codexec sandbox-watchdog:", err)
		}
	}
	start := time.Now()
	procs := w.killProcesses()
	ctrs := w.removeContainers()
	if procs+ctrs > 0 {
		fmt.Fprintf(os.Stderr, "codexec sandbox-watchdog: the server ended; killed %d processes and removed %d containers of its runs in %v\n",
			procs, ctrs, time.Since(start).Round(time.Millisecond))
	}
	return 0
}

// apply records one registration line.
func (w *watchdog) apply(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "group", "ungroup":
		pg, err := strconv.Atoi(rest)
		if err != nil || pg <= 1 {
			return fmt.Errorf("bad process group in %q", line)
		}
		if verb == "group" {
			w.groups[pg] = true
		} else {
			delete(w.groups, pg)
		}
	case "containers":
		cli, label, err := unquotePair(rest)
		if err != nil {
			return fmt.Errorf("bad containers line %q: %v", line, err)
		}
		w.containers[[2]string{cli, label}] = true
	default:
		return fmt.Errorf("unknown message %q", line)
	}
	return nil
}

// unquotePair splits `"A" "B"` into A and B.
func unquotePair(s string) (string, string, error) {
	a, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", "", err
	}
	first, _ := strconv.Unquote(a)
	second, err := strconv.Unquote(strings.TrimPrefix(s[len(a):], " "))
	return first, second, err
}

// killProcesses kills the registered process groups, then kills every
// process in them or marked, with the groups marked processes lead, until
// a scan of /proc finds none alive (killed processes can have forked
// meanwhile). It returns how many processes it killed.
func (w *watchdog) killProcesses() int {
	own := syscall.Getpgrp()
	for pg := range w.groups {
		if pg != own {
			_ = syscall.Kill(-pg, syscall.SIGKILL)
		}
	}
	killed := map[int]bool{}
	for round := 0; round < 100; round++ {
		found := w.liveTargets(own)
		if len(found) == 0 {
			break
		}
		for pid, pgid := range found {
			if pgid == pid && pgid != own {
				_ = syscall.Kill(-pgid, syscall.SIGKILL)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killed[pid] = true
		}
		// A killed process can show as running until it is scheduled.
		time.Sleep(10 * time.Millisecond)
	}
	return len(killed)
}

// liveTargets scans /proc for processes still alive (not zombies) that are
// in a registered group or carry the marker, with their process groups.
func (w *watchdog) liveTargets(own int) map[int]int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	found := map[int]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, pgid, ok := procStat(pid)
		if !ok || state == 'Z' || state == 'X' || pgid == own {
			continue
		}
		if w.groups[pgid] || environHasPrefix(pid, w.marker) {
			found[pid] = pgid
		}
	}
	return found
}

// procStat reads the state and process group of pid.
func procStat(pid int) (state byte, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 3 {
		return 0, 0, false
	}
	pgid, err = strconv.Atoi(f[2])
	return f[0][0], pgid, err == nil
}

// environHasPrefix reports whether an entry of pid's environment starts
// with prefix.
func environHasPrefix(pid int, prefix string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, kv := range strings.Split(string(b), "\x00") {
		if strings.HasPrefix(kv, prefix) {
			return true
		}
	}
	return false
}

// removeContainers kills and removes, through each registered CLI, the
// containers with its label, in a few rounds (a container whose CLI died
// while creating it may appear late), within watchdogContainerTime. It
// returns how many it removed.
func (w *watchdog) removeContainers() int {
	ctx, cancel := context.WithTimeout(context.Background(), watchdogContainerTime)
	defer cancel()
	removed := map[string]bool{}
	for c := range w.containers {
		for round := 0; round < 3 && ctx.Err() == nil; round++ {
			ids := labelled(ctx, c[0], c[1])
			if len(ids) == 0 {
				break
			}
			killContainers(ctx, c[0], ids)
			for _, id := range ids {
				removed[id] = true
			}
		}
	}
	return len(removed)
}

// labelled lists the ids of the containers, running or not, labelled label.
func labelled(ctx context.Context, cli, label string) []string {
	out, err := exec.CommandContext(ctx, cli, "ps", "-a", "--filter", "label="+label, "--format", "{{.ID}}").Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "codexec sandbox-watchdog: %s ps: %v\n", cli, err)
		return nil
	}
	return strings.Fields(string(out))
}

// killContainers kills and removes ids, one command each, all at once
// (podman stops at the first container gone when given several, and `rm
// -f` alone waits the stop timeout of a running container).
func killContainers(ctx context.Context, cli string, ids []string) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() {
			_ = exec.CommandContext(ctx, cli, "kill", "--signal", "KILL", id).Run()
			_ = exec.CommandContext(ctx, cli, "rm", "-f", id).Run()
		})
	}
	wg.Wait()
}
