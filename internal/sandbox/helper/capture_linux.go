package helper

import (
	"errors"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// listenBacklog is each captured TCP listener's backlog: connections the
// program opens before the server serves them wait there.
const listenBacklog = 128

// makeSockets brings loopback up in the calling process's network
// namespace and makes s there, with raw system calls only (sandbox-init
// runs no poller). The caller owns the descriptors it returns.
func makeSockets(s Sockets) (fds []int, retErr error) {
	if err := loopbackUp(); err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			closeFds(fds)
			fds = nil
		}
	}()
	for _, k := range s.List() {
		fd, err := listenOn(k)
		if err != nil {
			return fds, fmt.Errorf("captured socket %d: %w", k.Port, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// loopbackUp sets lo up (IFF_UP), as bwrap does in a network namespace it
// makes itself.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback up: %w", err)
	}
	return nil
}

// listenOn makes the listening (or, for DNS over UDP, bound) socket k.
func listenOn(k Socket) (int, error) {
	typ, addr := unix.SOCK_STREAM, [4]byte{127, 0, 0, 1}
	switch k.Kind {
	case DNSUDPSocket:
		typ = unix.SOCK_DGRAM
	case PortSocket:
		addr = [4]byte{}
	}
	fd, err := unix.Socket(unix.AF_INET, typ|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	if err == nil {
		err = unix.Bind(fd, &unix.SockaddrInet4{Port: k.Port, Addr: addr})
	}
	if err == nil && typ == unix.SOCK_STREAM {
		err = unix.Listen(fd, listenBacklog)
	}
	if err != nil {
		_ = unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// captureInto makes s, sends the sockets on conn with CaptureTag and closes
// conn and every socket: from then on only the server holds them. With no
// socket to make it only brings loopback up and sends nothing.
func captureInto(conn int, s Sockets) error {
	defer unix.Close(conn)
	fds, err := makeSockets(s)
	if err != nil || len(fds) == 0 {
		return err
	}
	defer closeFds(fds)
	return sendSockets(conn, CaptureTag, fds)
}

// sendSockets is the sending half of the socket wire: one byte, tag, with
// fds attached (SCM_RIGHTS) in Sockets.List order, on the unix stream
// socket conn. Raw system calls only.
func sendSockets(conn int, tag byte, fds []int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(conn, []byte{tag}, oob, nil, 0); err != nil {
		return fmt.Errorf("send the captured sockets: %w", err)
	}
	return nil
}

// ReceiveSockets is the receiving half of sendSockets (and of a python
// zygote child's "R" with its sockets): it reads the byte
// tag and exactly want descriptors from conn (whose descriptor must be
// non-blocking, so that timeout holds) and returns them as files, close-on-exec.
func ReceiveSockets(conn *os.File, tag byte, want int, timeout time.Duration) ([]*os.File, error) {
	files, _, err := ReceiveSocketsFrom(conn, tag, want, timeout)
	return files, err
}

// ReceiveSocketsFrom is ReceiveSockets that also returns the sender's pid,
// in this process's pid namespace, where conn passes credentials
// (SO_PASSCRED set before the message was sent); 0 where it does not.
func ReceiveSocketsFrom(conn *os.File, tag byte, want int, timeout time.Duration) ([]*os.File, int, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(timeout))
	defer conn.SetReadDeadline(time.Time{})
	// Room for the credentials too: the kernel puts them first, and a
	// buffer without room for them would cut the descriptors off.
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4*(want+1))+unix.CmsgSpace(unix.SizeofUcred))
	var n, oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return rerr != unix.EAGAIN
	})
	if err = errors.Join(err, rerr); err != nil {
		return nil, 0, fmt.Errorf("receive the captured sockets: %w", err)
	}
	fds, pid, err := parseRights(oob[:oobn])
	if err == nil && (n != 1 || buf[0] != tag) {
		err = fmt.Errorf("expected %q, read %q", tag, buf[:n])
	}
	if err == nil && len(fds) != want {
		err = fmt.Errorf("expected %d captured sockets, got %d", want, len(fds))
	}
	if err != nil {
		closeFds(fds)
		return nil, 0, fmt.Errorf("receive the captured sockets: %w", err)
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "captured-socket")
	}
	return files, pid, nil
}

// parseRights returns every descriptor in the control messages oob, and
// the sender's pid if they carry credentials (else 0).
func parseRights(oob []byte) (fds []int, pid int, err error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, 0, err
	}
	for i := range msgs {
		if cred, err := unix.ParseUnixCredentials(&msgs[i]); err == nil {
			pid = int(cred.Pid)
			continue
		}
		got, err := unix.ParseUnixRights(&msgs[i])
		if err == nil {
			fds = append(fds, got...)
		}
	}
	return fds, pid, nil
}

func closeFds(fds []int) {
	for _, fd := range fds {
		_ = unix.Close(fd)
	}
}
