//go:build linux && !amd64

package seccomp

// The filter is built for amd64 only so far; elsewhere Program reports it
// unavailable and the namespace backend refuses to start (the deny-list
// needs per-architecture syscall numbers).
const (
	auditArch = 0
	x32Bit    = 0
)

var deniedSyscalls []int
