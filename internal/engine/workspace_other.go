//go:build !linux

package engine

import "golang.org/x/sys/unix"

// openDirFlags open a directory only to ask about its permissions
// (userCanWrite); without O_PATH, a read-only open.
const openDirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
