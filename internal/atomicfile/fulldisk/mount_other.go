//go:build !linux

package fulldisk

import "errors"

func mount(string, int64) error { return errors.New("tmpfs mounts are Linux-only") }

func unmount(string) {}

func remount(string, bool) error { return errors.New("tmpfs mounts are Linux-only") }
