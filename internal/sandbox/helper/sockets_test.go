package helper

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSocketsRoundTrip(t *testing.T) {
	cases := []struct {
		s    Sockets
		arg  string
		list []Socket
	}{
		{Sockets{}, "lo", nil},
		{Sockets{ProxyPort: 3128}, "proxy:3128", []Socket{{ProxySocket, 3128}}},
		{Sockets{ProxyPort: 3128, DNS: true, Ports: []int{80, 443}}, "proxy:3128 dns tcp:80 tcp:443",
			[]Socket{{ProxySocket, 3128}, {DNSUDPSocket, 53}, {DNSTCPSocket, 53}, {PortSocket, 80}, {PortSocket, 443}}},
	}
	for _, c := range cases {
		if got := c.s.String(); got != c.arg {
			t.Errorf("%+v.String() = %q, want %q", c.s, got, c.arg)
		}
		back, err := ParseSockets(c.arg)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(c.s.List(), back.List()); diff != "" {
			t.Errorf("%q parsed (-want +got):\n%s", c.arg, diff)
		}
		if diff := cmp.Diff(c.list, c.s.List()); diff != "" {
			t.Errorf("%q list (-want +got):\n%s", c.arg, diff)
		}
	}
	for _, bad := range []string{"proxy:0", "tcp:70000", "udp:53", "proxy"} {
		if _, err := ParseSockets(bad); err == nil {
			t.Errorf("ParseSockets(%q) accepted", bad)
		}
	}
}
