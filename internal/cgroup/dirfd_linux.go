package cgroup

import "golang.org/x/sys/unix"

// pathFlag opens a directory only to look names up in it (see openDirs).
const pathFlag = unix.O_PATH
