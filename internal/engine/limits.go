package engine

import "github.com/codexec/codexec/internal/sandbox"

// limitsOf is which of spec's limits hold and how on the engine's backend
// (see Limits).
func (e *Engine) limitsOf(spec sandbox.Spec, diskBytes int64) *sandbox.Enforcement {
	return Limits(e.backend, spec, diskBytes)
}

// Limits is which of spec's limits hold and how on b, as the engine
// reports them: as b says (nil when it does not: nothing is claimed), with
// diskBytes, the size of the bounded disk the run's workspace and /tmp
// (spec.TmpDir) are on (0 for none), as its disk limit: that disk, not
// the backend, bounds what the run writes.
func Limits(b sandbox.Backend, spec sandbox.Spec, diskBytes int64) *sandbox.Enforcement {
	enf, ok := sandbox.EnforcedBy(b, spec)
	if !ok {
		return nil
	}
	if diskBytes > 0 {
		enf.Disk = sandbox.DiskImage(diskBytes)
	}
	return &enf
}

// diskBytes is the size of a bounded disk, 0 for none.
func (w *Workspace) diskBytes() int64 {
	if w.disk == nil {
		return 0
	}
	return w.disk.Limit()
}
