package helper

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
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
//	cgroup "DIR"             kill every process beneath the control group
//	                         directory DIR when the server ends
//	clean                    the server is exiting and has removed its
//	                         containers itself: skip the containers (a CLI
//	                         call costs the exit hundreds of milliseconds,
//	                         as the watchdog holds the server's stderr)
//
// Its one argument is the run marker prefix of the server's subprocess runs
// ("CODEXEC_RUN=<server>/", package proc): processes whose environment
// carries it are killed too, with the process groups they lead, so that a
// setsid'd double fork of a run goes as well.

// watchdogContainerTime bounds the removal of the server's containers.
const watchdogContainerTime = 30 * time.Second

// watchdog is what the server registered.
type watchdog struct {
	clean      bool
	marker     string
	groups     map[int]bool
	cgroups    map[string]bool
	containers map[[2]string]bool
}

// RunWatchdog is the body of `sandbox-watchdog MARKER_PREFIX`: it reads
// registrations until its stdin ends, then kills and removes what is
// registered and what carries the marker, and exits 0.
func RunWatchdog(args []string) int {
	if len(args) != 1 || !markerPrefix(args[0]) {
		fmt.Fprintln(os.Stderr, "codexec sandbox-watchdog: usage: sandbox-watchdog MARKER_PREFIX (internal helper of codexec)")
		return 2
	}
	// Signals a terminal or a service manager sends the server's group or
	// session must not end the watchdog before the server: only the end of
	// its stdin does.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	w := &watchdog{marker: args[0], groups: map[int]bool{}, cgroups: map[string]bool{}, containers: map[[2]string]bool{}}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if err := w.apply(sc.Text()); err != nil {
			fmt.Fprintln(os.Stderr, "codexec sandbox-watchdog:", err)
		}
	}
	start := time.Now()
	groups, procs := w.killProcesses()
	ctrs := 0
	if !w.clean {
		ctrs = w.removeContainers()
	}
	if groups+procs+ctrs > 0 {
		fmt.Fprintf(os.Stderr, "codexec sandbox-watchdog: the server ended; killed %d process groups and %d processes and removed %d containers of its runs in %v\n",
			groups, procs, ctrs, time.Since(start).Round(time.Millisecond))
	}
	return 0
}

// markerPrefix reports whether s has the form of a run marker prefix,
// KEY=NAME/ with a name of its own: never a prefix every process could
// carry (PATH=/).
func markerPrefix(s string) bool {
	body, ok := strings.CutSuffix(s, "/")
	key, name, found := strings.Cut(body, "=")
	return ok && found && key != "" && name != "" && !strings.Contains(name, "/")
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
	case "cgroup":
		dir, err := strconv.Unquote(rest)
		if err != nil || !strings.HasPrefix(dir, "/") {
			return fmt.Errorf("bad cgroup line %q", line)
		}
		w.cgroups[dir] = true
	case "clean":
		w.clean = true
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
// process in them, in the registered control groups or marked, with the
// groups marked processes lead, until
// a scan of /proc finds none alive (killed processes can have forked
// meanwhile). It returns how many registered groups it found and how
// many live processes its scans found (and killed) after that.
func (w *watchdog) killProcesses() (groups, procs int) {
	own := syscall.Getpgrp()
	for pg := range w.groups {
		if pg != own && syscall.Kill(-pg, syscall.SIGKILL) == nil {
			groups++
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
	return groups, len(killed)
}

// liveTargets scans /proc for processes still alive (not zombies) that are
// in a registered group or carry the marker, with their process groups.
func (w *watchdog) liveTargets(own int) map[int]int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	found := map[int]int{}
	inCgroup := w.cgroupProcs()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		state, pgid, ok := procStat(pid)
		if !ok || state == 'Z' || state == 'X' || pgid == own {
			continue
		}
		if w.groups[pgid] || inCgroup[pid] || environHasPrefix(pid, w.marker) {
			found[pid] = pgid
		}
	}
	return found
}

// cgroupProcs lists the processes beneath the registered control group
// directories.
func (w *watchdog) cgroupProcs() map[int]bool {
	procs := map[int]bool{}
	for dir := range w.cgroups {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(path, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					procs[pid] = true
				}
			}
			return nil
		})
	}
	return procs
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

// removeContainers kills, then removes, through each registered CLI, the
// containers with its label, within watchdogContainerTime, and returns how
// many it found. The kill comes first and in one command (a CLI call costs
// a few hundred milliseconds); given several, podman's kill and rm stop at
// the first container that is gone, so any still running after it are
// killed one by one, and the removal is one command per container, all at
// once.
func (w *watchdog) removeContainers() int {
	ctx, cancel := context.WithTimeout(context.Background(), watchdogContainerTime)
	defer cancel()
	found := map[string]bool{}
	for c := range w.containers {
		cli, label := c[0], c[1]
		ids := labelled(ctx, cli, label, false)
		if len(ids) == 0 {
			continue
		}
		_ = exec.CommandContext(ctx, cli, append([]string{"kill", "--signal", "KILL"}, ids...)...).Run()
		for round := 0; round < 3 && ctx.Err() == nil; round++ {
			running := labelled(ctx, cli, label, true)
			if len(running) == 0 {
				break
			}
			ids = append(ids, running...)
			eachContainer(ctx, cli, running, "kill", "--signal", "KILL")
		}
		eachContainer(ctx, cli, labelled(ctx, cli, label, false), "rm", "-f")
		for _, id := range ids {
			found[id] = true
		}
	}
	return len(found)
}

// labelled lists the ids of the containers labelled label: all, or only
// the running ones.
func labelled(ctx context.Context, cli, label string, running bool) []string {
	args := []string{"ps", "--filter", "label=" + label, "--format", "{{.ID}}"}
	if !running {
		args = append(args, "-a")
	}
	out, err := exec.CommandContext(ctx, cli, args...).Output()
	if err != nil {
		fmt.Fprintf(os.Stderr, "codexec sandbox-watchdog: %s ps: %v\n", cli, err)
		return nil
	}
	return strings.Fields(string(out))
}

// eachContainer runs `cli args… ID` for every id, all at once.
func eachContainer(ctx context.Context, cli string, ids []string, args ...string) {
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { _ = exec.CommandContext(ctx, cli, slices.Concat(args, []string{id})...).Run() })
	}
	wg.Wait()
}
