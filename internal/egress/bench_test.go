package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkTunnelDownload moves 100 MiB from a loopback upstream through
// a CONNECT tunnel, next to the same download made directly.
func BenchmarkTunnelDownload(b *testing.B) {
	u := startUpstreams(b)
	cfg := u.config(b)
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	const size = 100 << 20
	for _, mode := range []string{"direct", "tunnel"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				bind := s.Bind("exec_bench", "", cfg.Ceiling)
				c := newTestCapture(b)
				bind.Serve(c.Capture)
				conn := benchConn(b, mode, c, u)
				fmt.Fprintf(conn, "GET /?n=%d HTTP/1.1\r\nHost: plain.test\r\nConnection: close\r\n\r\n", size)
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					b.Fatal(err)
				}
				if n, err := io.Copy(io.Discard, resp.Body); err != nil || n != size {
					b.Fatalf("read %d bytes: %v", n, err)
				}
				conn.Close()
				bind.Close()
			}
		})
	}
}

func benchConn(b *testing.B, mode string, c *testCapture, u *upstreams) net.Conn {
	if mode == "direct" {
		conn, err := net.Dial("tcp", u.plain.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		return conn
	}
	conn, err := net.DialTimeout("tcp", c.proxyAddr, 5*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", u.plainOrigin, u.plainOrigin)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("CONNECT: %v %v", resp, err)
	}
	return conn
}
