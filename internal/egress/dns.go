package egress

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// The DNS stub answers the sandbox's queries itself and never forwards
// one: an allowed name gets a stub address (127.64.0.0/10, one per name
// in a binding) that the transparent listeners map back to the name; a
// denied name gets NXDOMAIN, so a lookup leaks nothing.

// stubTTL is the TTL of stub answers; the address of a name never
// changes within a binding.
const stubTTL = 300

// maxStubNames bounds the names one binding hands addresses to.
const maxStubNames = 1 << 16

// stubNames hands out stub addresses and maps them back.
type stubNames struct {
	mu     sync.Mutex
	byName map[string]netip.Addr
	byAddr map[netip.Addr]string
	next   netip.Addr
}

func newStubNames() *stubNames {
	return &stubNames{
		byName: map[string]netip.Addr{},
		byAddr: map[netip.Addr]string{},
		next:   netip.MustParseAddr("127.64.0.1"),
	}
}

// addrFor returns name's stub address, giving it the next one the first
// time; false once the binding has handed out maxStubNames.
func (n *stubNames) addrFor(name string) (netip.Addr, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a, ok := n.byName[name]; ok {
		return a, true
	}
	if len(n.byName) >= maxStubNames {
		return netip.Addr{}, false
	}
	a := n.next
	n.next = a.Next()
	n.byName[name] = a
	n.byAddr[a] = name
	return a, true
}

// name returns the name a stub address was given for.
func (n *stubNames) name(a netip.Addr) (string, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	name, ok := n.byAddr[a]
	return name, ok
}

// namesHost reports whether some rule of p allows host on any port.
func (p Policy) namesHost(host string) bool {
	for _, r := range p.Allow {
		if r.matchesHost(host) {
			return true
		}
	}
	return false
}

// answer builds the stub's reply to q: A for allowed names, an empty
// NOERROR for their other types (AAAA: programs fall back to IPv4),
// NXDOMAIN for anything the policy does not name, NOTIMP for anything
// but a single standard query, REFUSED for classes other than IN.
func (b *Binding) answer(q *dns.Msg) *dns.Msg {
	r := new(dns.Msg)
	r.SetReply(q)
	r.RecursionAvailable = true
	if q.Opcode != dns.OpcodeQuery || len(q.Question) != 1 {
		r.Rcode = dns.RcodeNotImplemented
		return r
	}
	question := q.Question[0]
	if question.Qclass != dns.ClassINET {
		r.Rcode = dns.RcodeRefused
		return r
	}
	name := strings.TrimSuffix(strings.ToLower(question.Name), ".")
	if _, err := netip.ParseAddr(name); err == nil || !b.Policy().namesHost(name) {
		if err != nil && name != "" {
			b.lookupDenied(name)
		}
		r.Rcode = dns.RcodeNameError
		return r
	}
	if question.Qtype != dns.TypeA {
		return r
	}
	a, ok := b.names.addrFor(name)
	if !ok {
		r.Rcode = dns.RcodeServerFailure
		return r
	}
	hdr := dns.RR_Header{Name: question.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: stubTTL}
	r.Answer = append(r.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
	return r
}

// serveDNSPacket answers UDP queries until pc is closed.
func (b *Binding) serveDNSPacket(pc net.PacketConn) {
	buf := make([]byte, dns.MaxMsgSize)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || b.ctx.Err() != nil {
				return
			}
			time.Sleep(acceptRetry)
			continue
		}
		q := new(dns.Msg)
		if q.Unpack(buf[:n]) != nil {
			continue // not a DNS message: nothing to answer
		}
		if out, err := b.answer(q).Pack(); err == nil {
			_, _ = pc.WriteTo(out, from)
		}
	}
}

// serveDNSStream answers TCP queries until l is closed.
func (b *Binding) serveDNSStream(l net.Listener) {
	b.acceptLoop(l, func(c net.Conn) {
		f := b.newFlow()
		dc := &dns.Conn{Conn: f.wrap(c, false)}
		for {
			q, err := dc.ReadMsg()
			if err != nil {
				return
			}
			if dc.WriteMsg(b.answer(q)) != nil {
				return
			}
		}
	})
}
