package engine

import "golang.org/x/sys/unix"

// openDirFlags open a directory only to ask about its permissions
// (userCanWrite): O_PATH needs no read permission on it.
const openDirFlags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
