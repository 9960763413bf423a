//go:build !linux

package proc

import "syscall"

// CloseOnExecInherited marks descriptors above stderr close-on-exec (see the
// Linux version); elsewhere it checks the first 256 descriptors.
func CloseOnExecInherited() {
	for fd := 3; fd < 256; fd++ {
		syscall.CloseOnExec(fd)
	}
}
