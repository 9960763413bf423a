package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/cgroup"
)

// hostProfile is what this host charges for the kinds of work an isolated
// run and a bare interpreter spawn do, printed before the Targets rows:
// their ratios hold on hosts like the one measured, not everywhere. A
// forked run is mostly kernel work on page tables (faults, fork, exit),
// a bare spawn mostly user-space start-up, so where a fault costs more
// (a hypervisor that manages the guest's page tables, nested
// virtualization) the forked runs lose their lead; CPU count and load
// change how much of it throughput shows (docs/performance.md, "Why the
// ratios depend on the host").
type hostProfile struct {
	cpus        int
	cpuModel    string
	kernel      string
	cgroup      string
	thp         string
	root        bool
	spawns      []spawnCost
	faultWall   time.Duration // per 4 KiB page, first touch of a fresh anonymous mapping
	faultCPU    time.Duration // the same in CPU time
	forkHeap    forkCost      // fork+exit of a python with forkHeapMiB touched
	forkNoHeap  forkCost      // the same python without that heap
	loadAtStart string
	busy        float64 // share of the machine's CPU time busy while profiling
}

// spawnCost is the median wall time of one bare command.
type spawnCost struct {
	key, name string // key: the program's base name, for metrics
	median    time.Duration
}

// faultMiB and forkHeapMiB size the page-fault and fork probes.
const (
	faultMiB    = 64
	forkHeapMiB = 100
)

// measureHostProfile takes the host's profile; spawns is how many times
// each bare command runs.
func measureHostProfile(tb testing.TB, spawns int) hostProfile {
	p := hostProfile{
		cpus: runtime.NumCPU(), cpuModel: cpuModel(), kernel: kernelRelease(),
		cgroup: cgroupLayout(), thp: bracketed(readTrim("/sys/kernel/mm/transparent_hugepage/enabled")),
		root: os.Geteuid() == 0, loadAtStart: loadAvg(),
	}
	b0, i0 := busyMs(), idleMs()
	for _, argv := range bareCommands() {
		p.spawns = append(p.spawns, spawnCost{filepath.Base(argv[0]), strings.Join(argv, " "), spawnMedian(tb, spawns, argv...)})
	}
	p.faultWall, p.faultCPU = pageFaultCost(tb, faultMiB, 5)
	p.forkHeap = forkExitCost(tb, forkHeapMiB, 21)
	p.forkNoHeap = forkExitCost(tb, 0, 21)
	p.busy = busyShare(b0, i0)
	return p
}

// bareCommands are the interpreter start-ups the rows compare against, each
// doing nothing (/usr/bin/python3: python3 on PATH may be a slower shim).
func bareCommands() [][]string {
	cmds := [][]string{{"/usr/bin/python3", "-c", "pass"}, {"/usr/bin/bash", "-c", "true"}}
	if node, err := exec.LookPath("node"); err == nil {
		cmds = append(cmds, []string{node, "-e", "0"})
	}
	return cmds
}

// timeBare runs argv once, fails tb unless its trimmed output is want, and
// returns its wall time (fork, exec, interpreter start-up and exit).
func timeBare(tb testing.TB, want string, argv ...string) time.Duration {
	tb.Helper()
	t0 := time.Now()
	out, err := exec.Command(argv[0], argv[1:]...).Output()
	d := time.Since(t0)
	if err != nil || strings.TrimSpace(string(out)) != want {
		tb.Fatalf("bare %v: %v %q", argv, err, out)
	}
	return d
}

func spawnMedian(tb testing.TB, n int, argv ...string) time.Duration {
	ds := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		ds = append(ds, timeBare(tb, "", argv...))
	}
	return medianOf(ds)
}

// pageFaultCost maps mib MiB of fresh anonymous memory rounds times, writes
// one byte to each page (each write a page fault that zeroes a new page),
// and returns the median wall and CPU time (this thread's) per page. Huge
// pages are declined so that a fault is one 4 KiB page on every host, as a
// forked run's faults are. CPU time stays right on a busy machine, where
// wall time also counts waits for a CPU.
func pageFaultCost(tb testing.TB, mib, rounds int) (wall, cpu time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var walls, cpus []time.Duration
	for r := 0; r < rounds; r++ {
		mem, err := unix.Mmap(-1, 0, mib<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			tb.Fatalf("mmap %d MiB: %v", mib, err)
		}
		_ = unix.Madvise(mem, unix.MADV_NOHUGEPAGE)
		w, c := touchPages(mem)
		walls, cpus = append(walls, w), append(cpus, c)
		_ = unix.Munmap(mem)
	}
	return medianOf(walls), medianOf(cpus)
}

// touchPages writes to each page of mem once; returns wall and thread CPU
// time per page.
func touchPages(mem []byte) (wall, cpu time.Duration) {
	page := os.Getpagesize()
	c0, t0 := threadCPU(), time.Now()
	for i := 0; i < len(mem); i += page {
		mem[i] = 1
	}
	n := time.Duration(len(mem) / page)
	return time.Since(t0) / n, (threadCPU() - c0) / n
}

// threadCPU is the calling OS thread's user + system time.
func threadCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_THREAD, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// forkProbe forks a child that exits at once, n times, from a python that
// first writes heapMiB MiB of heap (argv[1], argv[2]): the kernel copies
// the heap's page tables into the child and tears them down at its exit.
// It prints the median wall time of fork + exit + wait and the mean CPU
// time of both processes per fork (getrusage), in µs.
const forkProbe = `import os, resource as r, sys, time
heap = b"x" * (int(sys.argv[1]) << 20)
n = int(sys.argv[2])
def cpu():
    a, b = r.getrusage(r.RUSAGE_SELF), r.getrusage(r.RUSAGE_CHILDREN)
    return a.ru_utime + a.ru_stime + b.ru_utime + b.ru_stime
ts, c0 = [], cpu()
for _ in range(n):
    t = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    ts.append(time.perf_counter() - t)
ts.sort()
print(int(ts[len(ts) // 2] * 1e6), int((cpu() - c0) / n * 1e6))
`

// forkCost is forkProbe's result: wall and CPU time per fork+exit.
type forkCost struct{ wall, cpu time.Duration }

func forkExitCost(tb testing.TB, heapMiB, n int) forkCost {
	out, err := exec.Command("/usr/bin/python3", "-c", forkProbe, strconv.Itoa(heapMiB), strconv.Itoa(n)).Output()
	f := strings.Fields(string(out))
	if err != nil || len(f) != 2 {
		tb.Fatalf("fork probe (%d MiB heap): %v %q", heapMiB, err, out)
	}
	wall, err1 := strconv.Atoi(f[0])
	cpu, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		tb.Fatalf("fork probe (%d MiB heap) printed %q", heapMiB, out)
	}
	return forkCost{time.Duration(wall) * time.Microsecond, time.Duration(cpu) * time.Microsecond}
}

// log prints the profile as the rows' preamble.
func (p hostProfile) log(tb testing.TB) {
	tb.Logf("host %d CPUs (%s), kernel %s, %s, transparent huge pages %s, root %v, load %s, CPUs %.0f%% busy while profiling (one of them by the profile)",
		p.cpus, p.cpuModel, p.kernel, p.cgroup, p.thp, p.root, p.loadAtStart, 100*p.busy)
	for _, s := range p.spawns {
		tb.Logf("host bare %-22s p50 %7.2f ms", s.name, ms(s.median))
	}
	tb.Logf("host page fault (first write to a fresh anonymous page, %d MiB) %.3f µs of CPU a page (wall %.3f µs)",
		faultMiB, us(p.faultCPU), us(p.faultWall))
	tb.Logf("host fork+exit of a python with %d MiB touched heap %.2f ms of CPU (wall %.2f ms); without it %.2f ms (wall %.2f ms)",
		forkHeapMiB, ms(p.forkHeap.cpu), ms(p.forkHeap.wall), ms(p.forkNoHeap.cpu), ms(p.forkNoHeap.wall))
}

// report adds the profile's figures to the benchmark's metrics.
func (p hostProfile) report(b *testing.B) {
	b.ReportMetric(float64(p.cpus), "host-cpus")
	b.ReportMetric(us(p.faultCPU), "host-fault-cpu-µs/page")
	b.ReportMetric(ms(p.forkHeap.cpu), "host-fork100MiB-cpu-ms")
	for _, s := range p.spawns {
		b.ReportMetric(ms(s.median), "host-bare-"+s.key+"-ms")
	}
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages.
func loadAvg() string {
	f := strings.Fields(readTrim("/proc/loadavg"))
	return strings.Join(f[:min(3, len(f))], " ")
}

// idleMs is the machine's idle CPU time so far, in ms (/proc/stat: idle,
// iowait), the complement of busyMs.
func idleMs() float64 {
	f := strings.Fields(strings.SplitN(readTrim("/proc/stat"), "\n", 2)[0])
	var sum float64
	for _, i := range []int{4, 5} {
		if i < len(f) {
			v, _ := strconv.ParseFloat(f[i], 64)
			sum += v * 10
		}
	}
	return sum
}

// busyShare is the share of CPU time the machine spent busy since busy0
// and idle0 were read.
func busyShare(busy0, idle0 float64) float64 {
	b, i := busyMs()-busy0, idleMs()-idle0
	if b+i <= 0 {
		return 0
	}
	return b / (b + i)
}

func kernelRelease() string { return readTrim("/proc/sys/kernel/osrelease") }

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "model unknown"
}

// cgroupLayout names the cgroup version codexec would use, and "hybrid"
// when a v1 host also mounts the unified hierarchy.
func cgroupLayout() string {
	info := cgroup.Detect()
	if _, err := os.Stat(cgroup.Root + "/unified/cgroup.procs"); err == nil && info.Version == 1 {
		return "cgroup v1 (hybrid)"
	}
	if info.Version == 0 {
		return "no cgroup"
	}
	return "cgroup v" + strconv.Itoa(info.Version)
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

// bracketed is the selected word of a sysfs choice list ("always [madvise]
// never" → "madvise"), or s itself.
func bracketed(s string) string {
	if i, j := strings.IndexByte(s, '['), strings.IndexByte(s, ']'); i >= 0 && j > i {
		return s[i+1 : j]
	}
	if s == "" {
		return "unknown"
	}
	return s
}
