package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
)

func TestPublicAddr(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"93.184.216.34", true},
		{"2606:2800:220:1:248:1893:25c8:1946", true},
		{"127.0.0.1", false},
		{"127.64.0.1", false},
		{"::1", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"192.168.1.1", false},
		{"100.64.0.1", false},
		{"169.254.169.254", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"0.0.0.0", false},
		{"::", false},
		{"255.255.255.255", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:93.184.216.34", true},
		{"64:ff9b::a9fe:a9fe", false},
		{"2002:a9fe:a9fe::1", false},
	}
	for _, tt := range tests {
		if got := publicAddr(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("publicAddr(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
}

func TestDestination(t *testing.T) {
	s, err := New(Config{
		Ceiling:  mustPolicy(t, "pinned.test,localhost,127.0.0.1:8080,[::1]:8443,unresolvable.invalid"),
		Pins:     map[string]netip.Addr{"pinned.test": netip.MustParseAddr("10.9.8.7")},
		StateDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Names not in /etc/hosts fail without a packet leaving the machine.
	s.resolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		return nil, errors.New("no DNS in this test")
	}}
	b := s.Bind("exec_t", "", s.Ceiling(""))
	defer b.Close()
	tests := []struct {
		host   string
		port   int
		want   string // address, or "" when denied
		reason string
	}{
		{"pinned.test", 443, "10.9.8.7:443", ""},
		{"localhost", 443, "", ReasonPrivate},
		{"127.0.0.1", 8080, "127.0.0.1:8080", ""},
		{"127.0.0.1", 443, "", ReasonIPLiteral},
		{"::1", 8443, "[::1]:8443", ""},
		{"10.9.8.7", 443, "", ReasonIPLiteral},
		{"other.test", 443, "", ReasonNotInPolicy},
		{"pinned.test", 22, "", ReasonNotInPolicy},
		{"unresolvable.invalid", 443, "", ReasonUnreachable},
	}
	for _, tt := range tests {
		addr, den := b.destination(context.Background(), tt.host, tt.port)
		switch {
		case tt.reason == "" && (den != nil || addr.String() != tt.want):
			t.Errorf("destination(%s, %d) = %v, %v; want %s", tt.host, tt.port, addr, den, tt.want)
		case tt.reason != "" && (den == nil || den.reason != tt.reason):
			t.Errorf("destination(%s, %d) = %v, %v; want denied: %s", tt.host, tt.port, addr, den, tt.reason)
		}
	}
}
