//go:build linux

package namespace

import "github.com/codexec/codexec/internal/sandbox"

// Enforced says how spec's limits hold (sandbox.Enforcer): by the run's
// cgroup; without one (rootless.go), memory and file size by resource
// limits per process and the process count by one per sandbox, all set by
// the Landlock step or a forked child (none without the step), CPU by
// nothing but the time limit. /tmp is a tmpfs of the disk limit unless
// the caller gave a TmpDir, whose disk is the caller's to report.
func (n *Backend) Enforced(spec sandbox.Spec) sandbox.Enforcement {
	l := spec.Limits
	tmp := sandbox.TmpfsDisk(tmpBytes(spec))
	if spec.TmpDir != "" {
		tmp = sandbox.EnforcedNone
	}
	if !n.noCgroup {
		return sandbox.Enforcement{Memory: sandbox.Mechanism(l.MemoryBytes, sandbox.EnforcedCgroup),
			Pids: sandbox.Mechanism(l.Pids, sandbox.EnforcedCgroup), CPU: sandbox.Mechanism(l.CPUs, sandbox.EnforcedCgroup), Disk: tmp}
	}
	if n.opts.NoLandlock {
		return sandbox.Enforcement{Memory: sandbox.EnforcedNone, Pids: sandbox.EnforcedNone, CPU: sandbox.EnforcedNone, Disk: tmp}
	}
	disk := tmp
	if l.DiskBytes > 0 {
		disk = sandbox.FileSizeRlimit(l.DiskBytes)
		if spec.TmpDir == "" {
			disk = tmp + ", " + disk
		}
	}
	return sandbox.Enforcement{Memory: sandbox.Mechanism(l.MemoryBytes, sandbox.EnforcedRlimit),
		Pids: sandbox.Mechanism(l.Pids, sandbox.EnforcedRlimitSandbox), CPU: sandbox.EnforcedNone, Disk: disk}
}

// tmpBytes is the size of a sandbox's /tmp tmpfs (see bwrapArgs.tmp).
func tmpBytes(spec sandbox.Spec) int64 {
	if d := spec.Limits.DiskBytes; d > 0 {
		return d
	}
	return 256 << 20
}
