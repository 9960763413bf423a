package execlog

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns prefix followed by 12 random hex digits (48 bits), e.g.
// "exec_1f2e3d4c5b6a". Collisions are negligible for the history sizes
// codexec keeps; IDs are safe to use as file and directory names.
func NewID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}
