package capture

import (
	"net"
	"os"
	"strings"
	"testing"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		spec sandbox.CaptureSpec
		want string // "" for valid
	}{
		{"egress-like", sandbox.CaptureSpec{ProxyPort: 3128, DNS: true, Ports: []int{80, 443},
			Files: []sandbox.Mount{{Host: "/var/lib/x/resolv.conf", Target: "/etc/resolv.conf"}}}, ""},
		{"disabled", sandbox.CaptureSpec{Files: []sandbox.Mount{{Host: "x", Target: "y"}}}, ""},
		{"proxy in ports", sandbox.CaptureSpec{ProxyPort: 443, Ports: []int{443}}, "port 443 is both the proxy and the captured port"},
		{"dns in ports", sandbox.CaptureSpec{DNS: true, Ports: []int{53}}, "port 53 is both the DNS and the captured port"},
		{"port twice", sandbox.CaptureSpec{Ports: []int{80, 80}}, "port 80 is both the captured and the captured port"},
		{"port range", sandbox.CaptureSpec{Ports: []int{70000}}, "captured port 70000 is not between 1 and 65535"},
		{"relative file", sandbox.CaptureSpec{DNS: true, Files: []sandbox.Mount{{Host: "x", Target: "/etc/x"}}}, "must be absolute"},
		{"unclean target", sandbox.CaptureSpec{DNS: true, Files: []sandbox.Mount{{Host: "/x", Target: "/etc/../x"}}}, "must be absolute and clean"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Check(&c.spec)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
}

// TestWrap wraps real sockets in wire order and checks each lands in its
// field; a short list is refused with every file closed.
func TestWrap(t *testing.T) {
	s := helper.Sockets{ProxyPort: 1, DNS: true, Ports: []int{2}}
	c, err := Wrap(s, socketFiles(t, s))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Proxy == nil || c.DNS == nil || c.DNSTCP == nil || len(c.Ports) != 1 || c.Ports[2] == nil {
		t.Fatalf("wrapped %+v", c)
	}
	files := socketFiles(t, s)
	if _, err := Wrap(s, files[:2]); err == nil {
		t.Fatal("a short list was wrapped")
	}
	for _, f := range files[:2] {
		if f.Fd() != ^uintptr(0) {
			t.Errorf("%s left open", f.Name())
		}
	}
	for _, f := range files[2:] {
		_ = f.Close()
	}
}

// socketFiles makes loopback sockets of the kinds s lists, as files.
func socketFiles(t *testing.T, s helper.Sockets) []*os.File {
	t.Helper()
	var files []*os.File
	for _, k := range s.List() {
		type filer interface{ File() (*os.File, error) }
		var sock interface {
			filer
			Close() error
		}
		if k.Kind == helper.DNSUDPSocket {
			pc, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Skipf("loopback sockets: %v", err)
			}
			sock = pc.(*net.UDPConn)
		} else {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Skipf("loopback sockets: %v", err)
			}
			sock = l.(*net.TCPListener)
		}
		f, err := sock.File()
		_ = sock.Close()
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}
