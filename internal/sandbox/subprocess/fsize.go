package subprocess

import (
	"strconv"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// File size caps in subprocess mode (RLIMIT_FSIZE): the size of any single
// file a program — and everything it starts — can write. A write past it
// fails with EFBIG, or SIGXFSZ kills a program that does not ignore it
// (Python ignores it). It bounds neither the number of files nor their
// total. Go cannot set a child's rlimits between fork and exec, so a cold
// run execs through the helper's sandbox-fsize step, which sets the limit
// and execs the program; a warm runner gets it right after its start, as it
// runs nothing of the user's before it is handed a run.

// fsizeArgv returns argv run with a file size cap of bytes (none if 0)
// through the helper.
func fsizeArgv(argv []string, bytes int64) ([]string, error) {
	if bytes <= 0 {
		return argv, nil
	}
	exe, err := helper.Exe()
	if err != nil {
		return nil, err
	}
	return append([]string{exe, helper.FsizeCommand, strconv.FormatInt(bytes, 10), "--"}, argv...), nil
}

// Enforced reports what holds in subprocess mode: the file size cap
// (spec.Limits.DiskBytes, per file, not a total) and no memory, process or
// CPU limit at all.
func (*Backend) Enforced(spec sandbox.Spec) sandbox.Enforcement {
	e := sandbox.Unenforced
	if spec.Limits.DiskBytes > 0 {
		e.Disk = sandbox.FileSizeRlimit(spec.Limits.DiskBytes)
	}
	return e
}
