package container

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/codexec/codexec/internal/sandbox"
)

// A container of a backend built with a CaptureSpec still runs with
// `--network none`: its network namespace holds only loopback, brought up
// by the engine. Before the program can connect, the server (root beside a
// rootful engine) enters that namespace on a locked OS thread, makes the
// CaptureSpec's listening sockets there and returns to its own namespace:
// the sockets stay in the container's namespace, served by the server
// (sandbox.Capture). Anything else the program dials fails at once: there
// is no route out of the namespace.
//
// Rootless engines put the container in a user namespace the server does
// not own; entering its network namespace needs that user namespace too.
// There a forwarder inside the container (listening on the same ports and
// relaying over a unix socket bound into it) would be needed instead; it is
// not built, and New refuses a CaptureSpec when the server is not root.

// captureIn makes cs's sockets in the network namespace of the host process
// pid (a container's first process) and returns them, owned by the server.
// Its namespace must not be the server's own.
func captureIn(pid int, cs *sandbox.CaptureSpec) (*sandbox.Capture, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/ns/net"
	ns, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("container network namespace: %w", err)
	}
	defer ns.Close()
	if err := notOwnNetNS(ns); err != nil {
		return nil, fmt.Errorf("container process %d: %w", pid, err)
	}
	var c *sandbox.Capture
	err = inNetNS(ns, func() (err error) { c, err = listenCapture(cs); return err })
	if err != nil {
		return nil, fmt.Errorf("making the network capture in container process %d: %w", pid, err)
	}
	return c, nil
}

// notOwnNetNS fails when ns is the server's own network namespace: sockets
// made there would listen on the host.
func notOwnNetNS(ns *os.File) error {
	var theirs, ours unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &theirs); err != nil {
		return err
	}
	if err := unix.Stat("/proc/self/ns/net", &ours); err != nil {
		return err
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		return errors.New("shares the server's network namespace (is the container network none?)")
	}
	return nil
}

// inNetNS runs fn on a locked OS thread while that thread is in the network
// namespace ns, then returns the thread to the server's namespace. If it
// cannot return, the thread is left locked so that Go ends it with its
// goroutine: no other goroutine ever runs in the container's namespace.
// The process's main thread is never used: /proc/self/net follows it.
func inNetNS(ns *os.File, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// Keep the main thread busy while another thread does the work.
			inner := make(chan error, 1)
			go func() { runtime.LockOSThread(); inner <- inNetNSLocked(ns, fn) }()
			done <- <-inner
			runtime.UnlockOSThread()
			return
		}
		done <- inNetNSLocked(ns, fn)
	}()
	return <-done
}

// inNetNSLocked is inNetNS on the thread the calling goroutine has locked
// (once); it unlocks the thread only once it is back in its own namespace.
func inNetNSLocked(ns *os.File, fn func() error) error {
	self, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer self.Close()
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("entering the network namespace: %w", err)
	}
	ferr := fn()
	if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
		// Stay locked: the thread ends with this goroutine.
		return errors.Join(ferr, fmt.Errorf("returning to the server's network namespace: %w", err))
	}
	runtime.UnlockOSThread()
	return ferr
}

// listenCapture makes cs's sockets in the calling thread's network
// namespace: the proxy on 127.0.0.1:ProxyPort, DNS on 127.0.0.1:53 (UDP
// and TCP), each of Ports on 0.0.0.0. On error it closes what it made.
func listenCapture(cs *sandbox.CaptureSpec) (_ *sandbox.Capture, retErr error) {
	c := &sandbox.Capture{}
	defer func() {
		if retErr != nil {
			_ = c.Close()
		}
	}()
	loop := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	var err error
	if cs.ProxyPort > 0 {
		if c.Proxy, err = listenTCP(loop, cs.ProxyPort); err != nil {
			return nil, err
		}
	}
	if cs.DNS {
		if c.DNSTCP, err = listenTCP(loop, 53); err != nil {
			return nil, err
		}
		if c.DNS, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(loop, 53))); err != nil {
			return nil, err
		}
	}
	for _, port := range cs.Ports {
		if c.Ports == nil {
			c.Ports = make(map[int]net.Listener, len(cs.Ports))
		}
		l, err := listenTCP(netip.IPv4Unspecified(), port)
		if err != nil {
			return nil, err
		}
		c.Ports[port] = l
	}
	return c, nil
}

// listenTCP listens on addr:port (IPv4 only: the namespace has no IPv6
// route out either, and the DNS stub answers A records only).
func listenTCP(addr netip.Addr, port int) (net.Listener, error) {
	return net.ListenTCP("tcp4", net.TCPAddrFromAddrPort(netip.AddrPortFrom(addr, uint16(port))))
}
