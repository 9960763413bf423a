//go:build !linux

package confine

import "errors"

func doAs(Identity, func() error) error {
	return errors.New("confine: acting as the sandbox user needs Linux")
}
