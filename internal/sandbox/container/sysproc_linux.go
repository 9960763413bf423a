package container

import "syscall"

// cliSysProcAttr puts a container's CLI in a process group of its own and
// has the kernel kill it when the server dies, so that no attached CLI
// outlives the server (the watchdog then removes the container).
func cliSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
