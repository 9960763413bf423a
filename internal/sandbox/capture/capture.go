// Package capture is the server's side of a captured network's sockets
// (sandbox.CaptureSpec, sandbox.Capture) for the backends that make them
// inside a sandbox: it checks a CaptureSpec, names its sockets in the
// helper's terms (helper.Sockets, the order their descriptors travel in),
// turns the descriptors a sandbox sent into the sandbox.Capture the server
// holds, and hands that to the run's egress owner or closes it.
package capture

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

// Check validates c: ports in range, no socket twice, file paths absolute
// and clean. A nil or disabled spec is valid.
func Check(c *sandbox.CaptureSpec) error {
	if !c.Enabled() {
		return nil
	}
	used := map[int]string{}
	claim := func(port int, what string) error {
		if port < 1 || port > 65535 {
			return fmt.Errorf("captured network: %s port %d is not between 1 and 65535", what, port)
		}
		if prev, ok := used[port]; ok {
			return fmt.Errorf("captured network: port %d is both the %s and the %s port", port, prev, what)
		}
		used[port] = what
		return nil
	}
	if c.ProxyPort != 0 {
		if err := claim(c.ProxyPort, "proxy"); err != nil {
			return err
		}
	}
	if c.DNS {
		_ = claim(helper.DNSPort, "DNS")
	}
	for _, p := range c.Ports {
		if err := claim(p, "captured"); err != nil {
			return err
		}
	}
	for _, f := range c.Files {
		if !filepath.IsAbs(f.Host) || !filepath.IsAbs(f.Target) || filepath.Clean(f.Target) != f.Target {
			return fmt.Errorf("captured network: file %q at %q: both paths must be absolute and clean", f.Host, f.Target)
		}
	}
	return nil
}

// Sockets is c in the helper's terms (none for a nil or disabled spec).
func Sockets(c *sandbox.CaptureSpec) helper.Sockets {
	if !c.Enabled() {
		return helper.Sockets{}
	}
	return helper.Sockets{ProxyPort: c.ProxyPort, DNS: c.DNS, Ports: slices.Clone(c.Ports)}
}

// Hand gives c to the run's egress owner e (e.Serve), or without one
// closes it, so the program's connections are refused at once. A nil c
// does nothing.
func Hand(e sandbox.Egress, c *sandbox.Capture) {
	switch {
	case c == nil:
	case e != nil:
		e.Serve(c)
	default:
		_ = c.Close()
	}
}

// Wrap turns files, the sockets of s in helper wire order
// (helper.Sockets.List), into a Capture owned by the server. The files are
// closed either way.
func Wrap(s helper.Sockets, files []*os.File) (c *sandbox.Capture, retErr error) {
	c = &sandbox.Capture{}
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
		if retErr != nil {
			_ = c.Close()
		}
	}()
	list := s.List()
	if len(files) != len(list) {
		return nil, fmt.Errorf("captured network: %d sockets for %d", len(files), len(list))
	}
	for i, k := range list {
		if k.Kind == helper.DNSUDPSocket {
			pc, err := net.FilePacketConn(files[i])
			if err != nil {
				return nil, fmt.Errorf("captured DNS socket: %w", err)
			}
			c.DNS = pc
			continue
		}
		l, err := net.FileListener(files[i])
		if err != nil {
			return nil, fmt.Errorf("captured socket on port %d: %w", k.Port, err)
		}
		switch k.Kind {
		case helper.ProxySocket:
			c.Proxy = l
		case helper.DNSTCPSocket:
			c.DNSTCP = l
		default:
			if c.Ports == nil {
				c.Ports = map[int]net.Listener{}
			}
			c.Ports[k.Port] = l
		}
	}
	return c, nil
}
