package sandbox

import "fmt"

// Enforcement says, for one run, which of its Limits actually hold and by
// what mechanism. Each value names the mechanism that enforces the run's
// limit of that resource, or EnforcedNone when nothing does — because the
// limit is zero (no limit from codexec) or because the backend cannot
// enforce it. A value is never a limit the run is not held to: results,
// the execution log and `codexec doctor` show it as is.
//
// The values are:
//   - EnforcedCgroup ("cgroup"): the run's own cgroup bounds all its
//     processes together (memory, pids, cpu).
//   - EnforcedRlimit ("rlimit per process"): setrlimit bounds each process
//     on its own, not the run as a whole.
//   - EnforcedContainer ("container"): the container engine's limit
//     (docker or podman run options, a cgroup it manages).
//   - TmpfsDisk ("tmpfs 256 MiB", disk only): /tmp is a tmpfs of that size;
//     the workspace is not bounded by it.
//   - DiskImage ("disk image 1 GiB", disk only): the workspace codexec made
//     and /tmp share a file system of that size (a caller's working_dir is
//     a host directory, not on it; a warm runner's /tmp is its own tmpfs of
//     the same size).
//   - FileSizeRlimit ("rlimit file size 256 MiB", disk only): each file a
//     process writes is at most that size; their total is not bounded.
//   - EnforcedNone ("none").
type Enforcement struct {
	Memory string `json:"memory"`
	Pids   string `json:"pids"`
	CPU    string `json:"cpu"`
	Disk   string `json:"disk"`
}

// Mechanisms of an Enforcement (see its doc); sizes are in TmpfsDisk,
// DiskImage and FileSizeRlimit.
const (
	EnforcedNone      = "none"
	EnforcedCgroup    = "cgroup"
	EnforcedRlimit    = "rlimit per process"
	EnforcedContainer = "container"
	// EnforcedRlimitSandbox ("rlimit per sandbox", pids only): a process
	// count limit set inside the run's own user namespace, where the
	// kernel counts the run's processes together.
	EnforcedRlimitSandbox = "rlimit per sandbox"
)

// Unenforced is an Enforcement that holds no limit at all.
var Unenforced = Enforcement{Memory: EnforcedNone, Pids: EnforcedNone, CPU: EnforcedNone, Disk: EnforcedNone}

// Enforcer is implemented by backends that can say which of a spec's
// limits they enforce and how. The answer describes the backend's own
// mechanisms for spec as Start would run it; the Disk of a spec with a
// TmpDir is the caller's to report (that directory's file system bounds
// /tmp there, e.g. the engine's DiskImage).
type Enforcer interface {
	Enforced(spec Spec) Enforcement
}

// EnforcedBy is b's Enforcement of spec, and false when b does not say
// (it is no Enforcer): callers then report nothing rather than a guess.
func EnforcedBy(b Backend, spec Spec) (Enforcement, bool) {
	e, ok := b.(Enforcer)
	if !ok {
		return Enforcement{}, false
	}
	return e.Enforced(spec), true
}

// Mechanism is m when limit is set (positive), EnforcedNone otherwise: a
// limit of zero is no limit, whatever could have enforced one.
func Mechanism[N int | int64 | float64](limit N, m string) string {
	if limit <= 0 {
		return EnforcedNone
	}
	return m
}

// TmpfsDisk is the Disk of a run whose /tmp is a tmpfs of bytes.
func TmpfsDisk(bytes int64) string { return "tmpfs " + Size(bytes) }

// DiskImage is the Disk of a run whose workspace and /tmp are on a file
// system of bytes.
func DiskImage(bytes int64) string { return "disk image " + Size(bytes) }

// FileSizeRlimit is the Disk of a run whose files are each capped at bytes
// (RLIMIT_FSIZE) and nothing else.
func FileSizeRlimit(bytes int64) string { return "rlimit file size " + Size(bytes) }

// Size renders bytes compactly for an Enforcement: "1 GiB", "256 MiB",
// "64 KiB", or bytes when not a whole KiB.
func Size(bytes int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if bytes >= 1<<u.shift && bytes%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", bytes>>u.shift, u.name)
		}
	}
	if bytes >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(bytes)/(1<<20))
	}
	return fmt.Sprintf("%d B", bytes)
}

// String renders e on one line for people (doctor, logs):
// "memory: cgroup, pids: cgroup, cpu: cgroup, disk: tmpfs 256 MiB".
func (e Enforcement) String() string {
	return fmt.Sprintf("memory: %s, pids: %s, cpu: %s, disk: %s", e.Memory, e.Pids, e.CPU, e.Disk)
}
