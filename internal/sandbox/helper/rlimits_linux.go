package helper

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// setRlimits applies RlimitsOption's "DATA,NPROC,FSIZE" (0: unchanged) to
// this process, soft and hard, so the program cannot raise them. DATA, not
// AS: node reserves far more address space than it uses and does not
// start under an address-space limit.
func setRlimits(v string) error {
	f := strings.Split(v, ",")
	if len(f) != 3 {
		return fmt.Errorf("bad %s %q", RlimitsOption, v)
	}
	for i, res := range []int{unix.RLIMIT_DATA, unix.RLIMIT_NPROC, unix.RLIMIT_FSIZE} {
		n, err := strconv.ParseUint(f[i], 10, 64)
		if err != nil {
			return fmt.Errorf("bad %s %q", RlimitsOption, v)
		}
		if n == 0 {
			continue
		}
		if err := unix.Setrlimit(res, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fmt.Errorf("set resource limit %d to %d: %w", res, n, err)
		}
	}
	return nil
}
