//go:build !linux

package cgroup

// pathFlag is 0 where O_PATH does not exist: groups use their paths.
const pathFlag = 0
