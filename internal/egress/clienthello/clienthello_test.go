package clienthello

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// clientHello returns the first bytes a crypto/tls client sends for
// serverName.
func clientHello(t *testing.T, serverName string) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		_ = tls.Client(b, &tls.Config{ServerName: serverName, InsecureSkipVerify: true}).Handshake()
		b.Close()
	}()
	buf := make([]byte, BufferBytes)
	_ = a.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := a.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func TestPeekSNI(t *testing.T) {
	for _, name := range []string{"api.example.com", "UPPER.Example.COM", ""} {
		hello := clientHello(t, name)
		r := bufio.NewReaderSize(bytes.NewReader(hello), BufferBytes)
		if ok, err := LooksTLS(r); !ok || err != nil {
			t.Errorf("LooksTLS(hello for %q) = %v, %v", name, ok, err)
		}
		got, err := PeekSNI(r)
		want := map[string]string{"UPPER.Example.COM": "upper.example.com"}[name]
		if want == "" {
			want = name
		}
		if err != nil || got != want {
			t.Errorf("PeekSNI(hello for %q) = %q, %v; want %q", name, got, err, want)
		}
		if r.Buffered() != len(hello) {
			t.Errorf("PeekSNI consumed bytes: %d buffered of %d", r.Buffered(), len(hello))
		}
	}
	for _, bad := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0xff, 0x03},
		{0x16, 0x03, 0x01, 0xff, 0xff},
	} {
		r := bufio.NewReaderSize(bytes.NewReader(bad), BufferBytes)
		if got, err := PeekSNI(r); err == nil {
			t.Errorf("PeekSNI(%q) = %q, want an error", bad, got)
		}
	}
}
