package helper

import (
	"fmt"
	"strconv"
	"strings"
)

// Sockets is what the first process of a sandbox makes in the fresh
// network namespace it starts in (sandbox-init, or a python zygote's
// child), before it gives up its privileges: loopback up, then the
// listening sockets of a captured network, which it sends to the server
// (sendSockets / ReceiveSockets) and closes. The zero value makes no socket
// (loopback only).
type Sockets struct {
	// ProxyPort is a TCP listener on 127.0.0.1 (0: none).
	ProxyPort int
	// DNS asks for 127.0.0.1:53, UDP and TCP.
	DNS bool
	// Ports are TCP listeners on 0.0.0.0 (every address of the namespace).
	Ports []int
}

// Socket is one socket of a Sockets, in wire order (List).
type Socket struct {
	Kind SocketKind
	Port int
}

// SocketKind tells what a Socket is for.
type SocketKind int

// The kinds of captured sockets, in the order List gives them.
const (
	ProxySocket  SocketKind = iota // TCP on 127.0.0.1:ProxyPort
	DNSUDPSocket                   // UDP on 127.0.0.1:53
	DNSTCPSocket                   // TCP on 127.0.0.1:53
	PortSocket                     // TCP on 0.0.0.0:Port
)

// DNSPort is the resolver port the DNS sockets bind.
const DNSPort = 53

// List returns the sockets in the order their descriptors travel on the
// wire: proxy, DNS over UDP, DNS over TCP, then each port as given.
func (s Sockets) List() []Socket {
	var l []Socket
	if s.ProxyPort > 0 {
		l = append(l, Socket{ProxySocket, s.ProxyPort})
	}
	if s.DNS {
		l = append(l, Socket{DNSUDPSocket, DNSPort}, Socket{DNSTCPSocket, DNSPort})
	}
	for _, p := range s.Ports {
		l = append(l, Socket{PortSocket, p})
	}
	return l
}

// String is the argument form of s (CaptureOption, the zygote's start
// arguments): space-separated "proxy:PORT", "dns", "tcp:PORT", or "lo" for
// loopback only.
func (s Sockets) String() string {
	var f []string
	if s.ProxyPort > 0 {
		f = append(f, "proxy:"+strconv.Itoa(s.ProxyPort))
	}
	if s.DNS {
		f = append(f, "dns")
	}
	for _, p := range s.Ports {
		f = append(f, "tcp:"+strconv.Itoa(p))
	}
	if len(f) == 0 {
		return "lo"
	}
	return strings.Join(f, " ")
}

// ParseSockets is the inverse of Sockets.String.
func ParseSockets(arg string) (Sockets, error) {
	var s Sockets
	for _, f := range strings.Fields(arg) {
		kind, port, _ := strings.Cut(f, ":")
		p, err := strconv.Atoi(port)
		switch {
		case f == "lo":
		case f == "dns":
			s.DNS = true
		case err != nil || p < 1 || p > 65535:
			return Sockets{}, fmt.Errorf("bad socket %q", f)
		case kind == "proxy":
			s.ProxyPort = p
		case kind == "tcp":
			s.Ports = append(s.Ports, p)
		default:
			return Sockets{}, fmt.Errorf("bad socket %q", f)
		}
	}
	return s, nil
}

// CaptureOption is sandbox-init's first option when the server started it
// in a fresh network namespace: `--capture K SOCKETS` brings loopback up,
// makes SOCKETS (Sockets.String) and sends them on extra descriptor K (fd
// 3 + K), which it then closes with its copies of the sockets.
const CaptureOption = "--capture"

// Wire tags of the socket messages (sendSockets, ReceiveSockets).
const (
	// CaptureTag precedes the sockets sandbox-init sends.
	CaptureTag byte = 'C'
	// ReadyTag is a runner's "ready", which a zygote's child sends with
	// its sockets attached.
	ReadyTag byte = 'R'
)
