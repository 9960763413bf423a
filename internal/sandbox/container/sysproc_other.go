//go:build !linux

package container

import "syscall"

// cliSysProcAttr puts a container's CLI in a process group of its own.
// Other systems have no parent-death signal: a CLI left by a killed server
// ends with its container, which the server's watchdog removes (or the
// run's deadline ends).
func cliSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
