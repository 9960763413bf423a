package helper

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// FdRef marks an argument that the launcher replaces by its number for
// extra descriptor K ("\x00fd:K").
const FdRef = "\x00fd:"

// launchMsg is the JSON payload of a launch message.
type launchMsg struct {
	Argv []string
	Env  []string
	// Root is the template plan (RootOption), descriptors as extra indexes.
	Root string `json:",omitempty"`
	// Net, set when the server started the launcher in a fresh network
	// namespace, is what to make there (loopback up at least); its
	// sockets come back on fd 3 (CaptureTag).
	Net *Sockets `json:",omitempty"`
}

// SendLaunch hands a pooled launcher, over its control socket ctl, its
// stdio (fds 0–2), extra descriptors, template plan (RootOption; "" for
// none), network set-up (nil: none; only for a launcher started in a fresh
// network namespace, whose sockets then come back on ctl: ReceiveSockets
// with CaptureTag) and command. Arguments equal to FdRef+K name extra
// descriptor K.
func SendLaunch(ctl *os.File, argv, env []string, plan string, net *Sockets, stdio [3]*os.File, extra []*os.File) error {
	payload, err := json.Marshal(launchMsg{Argv: argv, Env: env, Root: plan, Net: net})
	if err != nil {
		return err
	}
	var fds []int
	for _, f := range append(stdio[:], extra...) {
		fds = append(fds, int(f.Fd()))
	}
	hdr := binary.LittleEndian.AppendUint64(nil, uint64(len(payload)))
	raw, err := ctl.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Write(func(fd uintptr) bool {
		serr = unix.Sendmsg(int(fd), hdr, unix.UnixRights(fds...), nil, 0)
		return serr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if serr != nil {
		return fmt.Errorf("pooled launcher: %w", serr)
	}
	_, err = ctl.Write(payload)
	return err
}

// receiveLaunch is the launcher side of SendLaunch: it reads the command from fd 3,
// puts stdio on 0–2, enters the template namespace if the message has a
// plan, and returns the message (argv with descriptor references
// resolved). Only raw system calls are used, so the Go runtime's own
// descriptors are never disturbed before exec.
func receiveLaunch() (launchMsg, error) {
	msg, fds, err := readLaunch()
	if err != nil {
		return msg, err
	}
	for i := 0; i < 3; i++ {
		if err := unix.Dup3(fds[i], i, 0); err != nil {
			return msg, err
		}
	}
	if msg.Root != "" {
		extra := func(k int) (int, bool) {
			if k < 0 || 3+k >= len(fds) {
				return 0, false
			}
			return fds[3+k], true
		}
		if err := enterRoot(msg.Root, extra); err != nil {
			return msg, err
		}
	}
	for i, a := range msg.Argv {
		if k, ok := cutFdRef(a); ok && k >= 0 && 3+k < len(fds) {
			fd := fds[3+k]
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
				return msg, err
			}
			msg.Argv[i] = strconv.Itoa(fd)
		}
	}
	return msg, nil
}

// readLaunch reads one launch message and its descriptors from fd 3.
func readLaunch() (msg launchMsg, fds []int, err error) {
	hdr := make([]byte, 8)
	oob := make([]byte, unix.CmsgSpace(64*4))
	n, oobn, _, _, err := unix.Recvmsg(3, hdr, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n != 8 {
		return msg, nil, fmt.Errorf("control message: %v (n=%d)", err, n)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return msg, nil, errors.New("control message without descriptors")
	}
	fds, err = unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) < 3 {
		return msg, nil, errors.New("control message: bad descriptors")
	}
	payload := make([]byte, binary.LittleEndian.Uint64(hdr))
	for got := 0; got < len(payload); {
		m, err := unix.Read(3, payload[got:])
		if err != nil || m == 0 {
			return msg, nil, fmt.Errorf("control payload: %v", err)
		}
		got += m
	}
	if err := json.Unmarshal(payload, &msg); err != nil {
		return msg, nil, err
	}
	return msg, fds, nil
}

func cutFdRef(a string) (int, bool) {
	if len(a) <= len(FdRef) || a[:len(FdRef)] != FdRef {
		return 0, false
	}
	k, err := strconv.Atoi(a[len(FdRef):])
	return k, err == nil
}
