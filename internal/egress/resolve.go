package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// dialTimeout bounds connecting to an upstream address.
const dialTimeout = 10 * time.Second

// refused are address ranges no name may resolve to without a pin: the
// server's own and its neighbours' services, and addresses that are not
// one host. netip's predicates cover loopback, RFC 1918 and ULA
// (IsPrivate), link-local, multicast and unspecified; these add the rest.
var refused = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),          // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),      // shared address space (CGNAT)
	netip.MustParsePrefix("192.0.0.0/24"),       // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"),      // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),        // reserved, incl. broadcast
	netip.MustParsePrefix("64:ff9b::/96"),       // NAT64: embeds any IPv4 address
	netip.MustParsePrefix("64:ff9b:1::/48"),     // local-use NAT64
	netip.MustParsePrefix("2002::/16"),          // 6to4: embeds any IPv4 address
	netip.MustParsePrefix("fec0::/10"),          // deprecated site-local
	netip.MustParsePrefix("::/128"),             // unspecified (also by predicate)
	netip.MustParsePrefix("100::/64"),           // discard-only
	netip.MustParsePrefix("2001:db8::/32"),      // documentation
	netip.MustParsePrefix("ff00::/8"),           // multicast (also by predicate)
	netip.MustParsePrefix("255.255.255.255/32"), // broadcast (in 240/4 too)
}

// publicAddr reports whether a may be dialed for a name without a pin.
// IPv4-mapped IPv6 addresses are judged by the IPv4 address they carry.
func publicAddr(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return false
	}
	for _, p := range refused {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// denial is why a destination is refused: the audit reason and the
// sentence the program is told.
type denial struct {
	reason  string
	message string
}

func (d *denial) Error() string { return d.message }

// destination decides where a connection to host:port (host normalized)
// goes under policy p: the address to dial, or a denial. Policy first,
// then the run's limits, then resolution: pins, IP literals named by a
// rule, else the system resolver with private addresses refused.
func (b *Binding) destination(ctx context.Context, host string, port int) (netip.AddrPort, *denial) {
	p := b.Policy()
	if ip, err := netip.ParseAddr(host); err == nil {
		if !p.Allows(host, port) {
			return netip.AddrPort{}, b.denied(ReasonIPLiteral, host, port)
		}
		if !b.admit() {
			return netip.AddrPort{}, b.denied(ReasonLimit, host, port)
		}
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	if !p.Allows(host, port) {
		return netip.AddrPort{}, b.denied(ReasonNotInPolicy, host, port)
	}
	if !b.admit() {
		return netip.AddrPort{}, b.denied(ReasonLimit, host, port)
	}
	addr, d := b.s.resolve(ctx, host, port)
	if d != nil {
		return netip.AddrPort{}, d
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// resolve gives the address to dial for an allowed name: its pin, else
// the first public address the system resolver returns.
func (s *Service) resolve(ctx context.Context, host string, port int) (netip.Addr, *denial) {
	if pin, ok := s.cfg.Pins[host]; ok {
		return pin.Unmap(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	addrs, err := s.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return netip.Addr{}, &denial{reason: ReasonUnreachable, message: fmt.Sprintf(
			"codexec egress: %s could not be resolved by the proxy (%v); pin it with CODEXEC_EGRESS_RESOLVE if it is an internal name", host, errText(err))}
	}
	for _, a := range addrs {
		if publicAddr(a) {
			return a.Unmap(), nil
		}
	}
	return netip.Addr{}, &denial{reason: ReasonPrivate, message: fmt.Sprintf(
		"codexec egress: %s:%d resolves to a private or local address (%s), which is refused; an operator can pin the name to that address with CODEXEC_EGRESS_RESOLVE", host, port, addrs[0])}
}

func errText(err error) string {
	if err == nil {
		return "no address"
	}
	return err.Error()
}

// denied builds the denial the program is told for reason.
func (b *Binding) denied(reason, host string, port int) *denial {
	target := net.JoinHostPort(host, fmt.Sprint(port))
	var msg string
	switch reason {
	case ReasonIPLiteral:
		msg = fmt.Sprintf("codexec egress: %s is an IP address no network rule names; connect by an allowed host name, or add the address to network.allow (within CODEXEC_EGRESS_ALLOW)", target)
	case ReasonLimit:
		msg = fmt.Sprintf("codexec egress: %s refused because this run reached its network limit (connections open or in total, or bytes)", target)
	default:
		msg = fmt.Sprintf("codexec egress: %s is not allowed by this run's network policy; allow it with the call's network.allow, within the server's CODEXEC_EGRESS_ALLOW", target)
	}
	return &denial{reason: reason, message: msg}
}

// dial connects to addr, an address already checked: the dialer is
// never given a name, so nothing is resolved twice. The connection is
// closed when the binding is, wherever it is blocked.
func (b *Binding) dial(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := b.s.dialer.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(b.ctx, func() { _ = conn.Close() })
	return &upstreamConn{Conn: conn, stop: stop}, nil
}

// upstreamConn is a connection to an upstream that the binding's end
// closes; closing it first stops that.
type upstreamConn struct {
	net.Conn
	stop func() bool
}

func (c *upstreamConn) Close() error {
	c.stop()
	return c.Conn.Close()
}

// CloseWrite half-closes the TCP connection (see meteredConn.CloseWrite).
func (c *upstreamConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
