//go:build !linux

package diskbound

import "os"

type dirState struct{}

func freshState(path string) dirState { return dirState{} }

func resetInPlace(path string, mode os.FileMode, fresh dirState) bool { return false }
