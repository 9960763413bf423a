package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// cgroupRoot is where cgroup hierarchies are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupControllers are the v1 controllers codexec uses; freezer makes kills
// race-free, the others enforce Limits.
var cgroupControllers = []string{"memory", "pids", "cpu", "freezer"}

// Cgroups creates one cgroup per run, nested below the server's own cgroup
// (so host limits on the server still bound its sandboxes), on cgroup v1
// (one directory per controller) or v2 (one unified directory). A Cgroups is
// immutable after DetectCgroups and safe for concurrent use.
type Cgroups struct {
	v2 bool
	// parents maps a controller ("" on v2) to the directory runs go below.
	parents map[string]string
}

// DetectCgroups finds usable cgroup controllers, creating the codexec parent
// groups. It fails when memory and pids limits cannot be enforced.
func DetectCgroups() (*Cgroups, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		return detectV2(own[""])
	}
	cg := &Cgroups{parents: map[string]string{}}
	for _, c := range cgroupControllers {
		dir := filepath.Join(cgroupRoot, c, own[c], "codexec")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("cgroup v1 %s controller unusable: %w", c, err)
		}
		cg.parents[c] = dir
	}
	return cg, nil
}

func detectV2(own string) (*Cgroups, error) {
	b, err := os.ReadFile(filepath.Join(cgroupRoot, own, "cgroup.subtree_control"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	for _, c := range []string{"memory", "pids"} {
		if !strings.Contains(string(b), c) {
			return nil, fmt.Errorf("cgroup v2: controller %s is not delegated to %s", c, filepath.Join(cgroupRoot, own))
		}
	}
	dir := filepath.Join(cgroupRoot, own, "codexec")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	ctl := "+memory +pids"
	if strings.Contains(string(b), "cpu") {
		ctl += " +cpu"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(ctl), 0o644); err != nil {
		return nil, fmt.Errorf("cgroup v2: enable controllers: %w", err)
	}
	return &Cgroups{v2: true, parents: map[string]string{"": dir}}, nil
}

// ownCgroups reads /proc/self/cgroup: controller → path ("" for v2).
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, sc.Err()
}

// Version reports "v1" or "v2".
func (c *Cgroups) Version() string {
	if c.v2 {
		return "v2"
	}
	return "v1"
}

// runGroup is the cgroup of one run.
type runGroup struct {
	v2   bool
	dirs map[string]string
}

// create makes the run's group and applies lim.
func (c *Cgroups) create(id string, lim Limits) (*runGroup, error) {
	g := &runGroup{v2: c.v2, dirs: map[string]string{}}
	for ctl, parent := range c.parents {
		dir := filepath.Join(parent, id)
		if err := os.Mkdir(dir, 0o755); err != nil {
			g.remove()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		g.dirs[ctl] = dir
	}
	if err := g.limit(lim); err != nil {
		g.remove()
		return nil, err
	}
	return g, nil
}

func (g *runGroup) limit(lim Limits) error {
	var writes [][2]string
	if g.v2 {
		d := g.dirs[""]
		writes = append(writes, [2]string{filepath.Join(d, "memory.max"), itoa64(lim.MemoryBytes)},
			[2]string{filepath.Join(d, "memory.swap.max"), "0"}, [2]string{filepath.Join(d, "pids.max"), itoa64(int64(lim.Pids))})
		if lim.CPUs > 0 {
			writes = append(writes, [2]string{filepath.Join(d, "cpu.max"), fmt.Sprintf("%d 100000", int64(lim.CPUs*100000))})
		}
	} else {
		writes = append(writes, [2]string{filepath.Join(g.dirs["memory"], "memory.limit_in_bytes"), itoa64(lim.MemoryBytes)},
			[2]string{filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes"), itoa64(lim.MemoryBytes)},
			[2]string{filepath.Join(g.dirs["pids"], "pids.max"), itoa64(int64(lim.Pids))})
		if lim.CPUs > 0 {
			writes = append(writes, [2]string{filepath.Join(g.dirs["cpu"], "cpu.cfs_period_us"), "100000"},
				[2]string{filepath.Join(g.dirs["cpu"], "cpu.cfs_quota_us"), itoa64(int64(lim.CPUs * 100000))})
		}
	}
	for _, w := range writes {
		if w[1] == "0" && !strings.HasSuffix(w[0], "swap.max") {
			continue // no limit configured
		}
		if err := os.WriteFile(w[0], []byte(w[1]), 0o644); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("cgroup limit %s=%s: %w", w[0], w[1], err)
		}
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// procsFiles are the cgroup.procs files a process must join.
func (g *runGroup) procsFiles() []string {
	var out []string
	for _, d := range g.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return out
}

// pids lists the processes in the group.
func (g *runGroup) pids() []int {
	dir := g.dirs[""]
	if !g.v2 {
		dir = g.dirs["pids"]
	}
	b, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// signal sends sig to every process in the group except skip.
func (g *runGroup) signal(sig syscall.Signal, skip int) {
	for _, pid := range g.pids() {
		if pid != skip {
			_ = syscall.Kill(pid, sig)
		}
	}
}

// kill stops every process in the group: cgroup.kill on v2; on v1 the group
// is frozen first so nothing can fork while it is being killed.
func (g *runGroup) kill() {
	if g.v2 {
		if os.WriteFile(filepath.Join(g.dirs[""], "cgroup.kill"), []byte("1"), 0o644) == nil {
			return
		}
		g.signal(syscall.SIGKILL, 0)
		return
	}
	state := filepath.Join(g.dirs["freezer"], "freezer.state")
	_ = os.WriteFile(state, []byte("FROZEN"), 0o644)
	g.signal(syscall.SIGKILL, 0)
	_ = os.WriteFile(state, []byte("THAWED"), 0o644)
}

// oomKilled reports whether the memory limit killed a process of the group.
func (g *runGroup) oomKilled() bool {
	file, key := filepath.Join(g.dirs["memory"], "memory.oom_control"), "oom_kill"
	if g.v2 {
		file = filepath.Join(g.dirs[""], "memory.events")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == key && f[1] != "0" {
			return true
		}
	}
	return false
}

// memoryPeak returns the peak memory use in bytes, or 0 if unknown.
func (g *runGroup) memoryPeak() int64 {
	file := filepath.Join(g.dirs["memory"], "memory.max_usage_in_bytes")
	if g.v2 {
		file = filepath.Join(g.dirs[""], "memory.peak")
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// remove kills what is left and deletes the group's directories, retrying
// briefly while the kernel finishes tearing processes down.
func (g *runGroup) remove() error {
	var errs []error
	for _, d := range g.dirs {
		var err error
		for i := 0; i < 100; i++ {
			if err = syscall.Rmdir(d); err == nil || errors.Is(err, syscall.ENOENT) {
				err = nil
				break
			}
			g.kill()
			time.Sleep(5 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("rmdir %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}
