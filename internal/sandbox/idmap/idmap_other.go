//go:build !linux

package idmap

import (
	"errors"
	"os"

	"github.com/codexec/codexec/internal/sandbox"
)

// ErrUnsupported: idmapped mounts exist only on Linux.
var ErrUnsupported = errors.New("idmapped mounts are not possible here")

// Mapper is unavailable off Linux.
type Mapper struct{}

// New returns a Mapper whose clones all fail.
func New(exe string, uid, gid int) *Mapper { return &Mapper{} }

// Clone fails with ErrUnsupported.
func (m *Mapper) Clone(dir string, o sandbox.Owner, ro bool) (*os.File, error) {
	return nil, ErrUnsupported
}

// Close does nothing.
func (m *Mapper) Close() {}
