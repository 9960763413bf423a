//go:build !linux

package cgroup

import (
	"errors"
	"os"
)

// Without Linux there are no cgroups to lock.
func lockDir(*os.File) error { return errors.New("cgroup: no directory locks") }

func lockHeld(string) (held, ok bool) { return false, false }

func sameDir(*os.File, string) bool { return false }
