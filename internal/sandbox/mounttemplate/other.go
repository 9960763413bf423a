//go:build !linux

package mounttemplate

import (
	"errors"
	"os"
)

// Template is unavailable off Linux.
type Template struct{}

// Open reports that template namespaces need Linux.
func Open(Config) (*Template, error) { return nil, errors.New("mount namespaces need Linux") }

// Join fails off Linux.
func (*Template) Join() (*os.File, error) { return nil, errors.New("mount namespaces need Linux") }

// Close does nothing off Linux.
func (*Template) Close() {}
