//go:build !linux

package instance

import "os"

func pidSelf() int { return os.Getpid() }

// bootID is unknown without /proc: every name is malformed, so nothing is
// ever judged dead.
func bootID() (string, bool) { return "", false }

func pidNS() (uint64, bool) { return 0, false }

func startTime(int) (uint64, procState) { return 0, procUnknown }
