//go:build linux

package namespace

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// echoEgress is a stand-in for the egress owner: it answers on every
// socket of the captures it serves, so a sandboxed program can tell which
// one it reached, and records the local address of each connection to a
// captured port.
type echoEgress struct {
	mu       sync.Mutex
	captures []*sandbox.Capture
	locals   []string
	wg       sync.WaitGroup
}

func (e *echoEgress) Serve(c *sandbox.Capture) {
	e.mu.Lock()
	e.captures = append(e.captures, c)
	e.mu.Unlock()
	e.accept(c.Proxy, func(conn net.Conn) string { return "proxy" })
	e.accept(c.DNSTCP, func(conn net.Conn) string { return "dns-tcp" })
	for port, l := range c.Ports {
		e.accept(l, func(conn net.Conn) string {
			local := conn.LocalAddr().(*net.TCPAddr)
			e.mu.Lock()
			e.locals = append(e.locals, local.String())
			e.mu.Unlock()
			return fmt.Sprintf("port %d", port)
		})
	}
	if c.DNS != nil {
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			buf := make([]byte, 512)
			for {
				n, from, err := c.DNS.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = c.DNS.WriteTo(append([]byte("dns-udp "), buf[:n]...), from)
			}
		}()
	}
}

// accept answers each connection on l with what name says and the first
// line the client sent.
func (e *echoEgress) accept(l net.Listener, name func(net.Conn) string) {
	if l == nil {
		return
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64)
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			n, _ := conn.Read(buf)
			_, _ = fmt.Fprintf(conn, "%s %s", name(conn), buf[:n])
			_ = conn.Close()
		}
	}()
}

// Close closes every capture served and waits for the servers to end.
func (e *echoEgress) Close() {
	e.mu.Lock()
	for _, c := range e.captures {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

func (e *echoEgress) served() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.captures)
}

const (
	testProxyPort = 3128
	testResolv    = "nameserver 127.0.0.1\noptions ndots:0\n"
	testBundle    = "codexec test CA bundle\n"
)

// testCaptureSpec is a CaptureSpec like egress's, its files in a 0700
// directory the sandbox user cannot reach.
func testCaptureSpec(t *testing.T) *sandbox.CaptureSpec {
	t.Helper()
	return testCaptureSpecIn(t, t.TempDir())
}

// testCaptureSpecIn is testCaptureSpec with its files below dir.
func testCaptureSpecIn(tb testing.TB, dir string) *sandbox.CaptureSpec {
	tb.Helper()
	dir = filepath.Join(dir, "state")
	resolv, bundle := filepath.Join(dir, "resolv.conf"), filepath.Join(dir, "ca.pem")
	if err := errors.Join(os.Mkdir(dir, 0o700), os.WriteFile(resolv, []byte(testResolv), 0o644),
		os.WriteFile(bundle, []byte(testBundle), 0o644)); err != nil {
		tb.Fatal(err)
	}
	return &sandbox.CaptureSpec{ProxyPort: testProxyPort, Ports: []int{80, 443}, DNS: true,
		Files: []sandbox.Mount{{Host: resolv, Target: "/etc/resolv.conf"}, {Host: bundle, Target: "/etc/ssl/certs/ca-certificates.crt"}}}
}

// newCaptureNamespace is a backend with a captured network; hostMounts
// starts bwrap from the host's mount namespace instead of the template.
func newCaptureNamespace(t *testing.T, pool sandbox.PoolOptions, hostMounts bool) *Backend {
	t.Helper()
	o := Options{OwnedRoot: sandboxtest.OwnedRoot, Pool: pool, CaptureSpec: testCaptureSpec(t)}
	if hostMounts {
		dir, err := os.MkdirTemp("", "codexec-bwrap-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		o.Bwrap = filepath.Join(dir, "bwrap")
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/usr/bin/bwrap", o.Bwrap); err != nil {
			t.Fatal(err)
		}
	}
	n, err := New(context.Background(), o)
	if err != nil {
		t.Skipf("namespace backend unavailable: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	if hostMounts != (n.tmpl == nil) {
		t.Fatalf("template namespace in use: %v, want %v", n.tmpl != nil, !hostMounts)
	}
	return n
}

// captureProbe is a python program that tries every way out of the
// sandbox and prints what happened, one line each.
const captureProbe = `
import errno, fcntl, socket, struct, time
def tcp(host, port):
    try:
        s = socket.create_connection((host, port), timeout=5)
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e))
    s.sendall(b"hi")
    data = s.recv(100)
    s.close()
    return data.decode()
print("proxy:", tcp("127.0.0.1", 3128))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.settimeout(5)
u.connect(("127.0.0.1", 53))
try:
    u.send(b"q")
    print("dns:", u.recv(100).decode())
except OSError as e:
    print("dns:", errno.errorcode.get(e.errno, str(e)))
print("dns tcp:", tcp("127.0.0.1", 53))
print("stub:", tcp("127.64.0.9", 443))
t0 = time.monotonic()
print("outside:", tcp("1.1.1.1", 443), time.monotonic() - t0 < 1)
try:
    socket.socket().bind(("0.0.0.0", 25))
    print("bind 25: bound")
except OSError as e:
    print("bind 25:", errno.errorcode[e.errno])
try:
    s = socket.socket()
    fcntl.ioctl(s.fileno(), 0x8914, struct.pack("16sH22x", b"lo", 0))
    print("lo down: done")
except OSError as e:
    print("lo down:", errno.errorcode[e.errno])
print("resolv:", open("/etc/resolv.conf").read().splitlines())
print("bundle:", open("/etc/ssl/certs/ca-certificates.crt").read().strip())
`

// probeServed is captureProbe's output when an egress owner serves the
// sandbox's sockets.
const probeServed = `proxy: proxy hi
dns: dns-udp q
dns tcp: dns-tcp hi
stub: port 443 hi
outside: ENETUNREACH True
bind 25: EACCES
lo down: EPERM
resolv: ['nameserver 127.0.0.1', 'options ndots:0']
bundle: codexec test CA bundle
`

// probeClosed is its output when the run has no egress owner: every
// captured socket refuses at once (the UDP query is refused by ICMP).
const probeClosed = `proxy: ECONNREFUSED
dns: ECONNREFUSED
dns tcp: ECONNREFUSED
stub: ECONNREFUSED
outside: ENETUNREACH True
bind 25: EACCES
lo down: EPERM
resolv: ['nameserver 127.0.0.1', 'options ndots:0']
bundle: codexec test CA bundle
`

// probeSpec is captureProbe as a run (warm-capable) in dir.
func probeSpec(dir string, e sandbox.Egress) sandbox.Spec {
	spec := sandboxtest.WarmSpec(sandbox.WarmPython, dir, captureProbe)
	spec.Egress = e
	return spec
}

// checkProbe runs spec and compares its output with want; with e, the
// stub connection must have reached the server at 127.64.0.9.
func checkProbe(t *testing.T, n *Backend, spec sandbox.Spec, e *echoEgress, want string) {
	t.Helper()
	before := 0
	if e != nil {
		before = e.served()
	}
	got := sandboxtest.Run(t, n, spec)
	if diff := cmp.Diff(want, got.Stdout); diff != "" || got.Exit.Code != 0 {
		t.Fatalf("probe (-want +got):\n%s\nexit %+v stderr %s", diff, got.Exit, got.Stderr)
	}
	if e == nil {
		return
	}
	if e.served() != before+1 {
		t.Errorf("egress served %d captures for one run", e.served()-before)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.locals) == 0 || !strings.HasPrefix(e.locals[len(e.locals)-1], "127.64.0.9:443") {
		t.Errorf("the stub connection's local addresses: %v", e.locals)
	}
}

// TestCaptureCold runs the probe cold: from a fresh launcher and a pooled
// one, from the template namespace and from the host's, served and not.
func TestCaptureCold(t *testing.T) {
	for _, hostMounts := range []bool{false, true} {
		n := newCaptureNamespace(t, sandbox.PoolOptions{}, hostMounts)
		e := &echoEgress{}
		t.Cleanup(e.Close)
		for i, c := range []struct {
			name   string
			egress bool
			pooled bool
		}{{"fresh served", true, false}, {"fresh closed", false, false}, {"pooled served", true, true}, {"pooled closed", false, true}} {
			t.Run(fmt.Sprintf("host mounts %v %s", hostMounts, c.name), func(t *testing.T) {
				spec := probeSpec(t.TempDir(), nil)
				spec.Warm = ""
				// New limits find no pooled launcher; the pool then refills for them.
				spec.Limits.Pids = 64 + i
				if c.pooled {
					sandboxtest.Run(t, n, spec)
					awaitLaunchers(t, n)
				}
				if !c.egress {
					checkProbe(t, n, spec, nil, probeClosed)
					return
				}
				spec.Egress = e
				checkProbe(t, n, spec, e, probeServed)
			})
		}
	}
}

// awaitLaunchers waits until a pooled launcher is ready.
func awaitLaunchers(t *testing.T, n *Backend) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		n.launchers.mu.Lock()
		ready := len(n.launchers.ready)
		n.launchers.mu.Unlock()
		if ready > 0 {
			return
		}
	}
	t.Fatal("no pooled launcher became ready")
}

// TestCaptureWarm runs the probe in warm runners (bwrap) and forked
// python runners, served and not.
func TestCaptureWarm(t *testing.T) {
	for _, fork := range []bool{false, true} {
		t.Run(fmt.Sprintf("fork %v", fork), func(t *testing.T) {
			n := newCaptureNamespace(t, sandbox.PoolOptions{Size: 1, Idle: time.Minute, Fork: fork}, false)
			if fork && !n.forkEnabled() {
				t.Skip("python fork-servers need Landlock ABI 6")
			}
			e := &echoEgress{}
			t.Cleanup(e.Close)
			dir := t.TempDir()
			for _, served := range []bool{true, false} {
				var egress sandbox.Egress
				want := probeClosed
				if served {
					egress, want = e, probeServed
				}
				spec := probeSpec(dir, egress)
				sandboxtest.WaitReady(t, n, spec)
				hits := sandboxtest.KindHits(n, sandbox.WarmPython)
				if served {
					checkProbe(t, n, spec, e, want)
				} else {
					checkProbe(t, n, spec, nil, want)
				}
				if sandboxtest.KindHits(n, sandbox.WarmPython) != hits+1 {
					t.Errorf("served %v: the run was not warm: %+v", served, n.PoolStats())
				}
				if fork && sandboxtest.ForkHits(n) == 0 {
					t.Errorf("no forked run: %+v", n.PoolStats())
				}
			}
		})
	}
}

// TestCaptureWarmBash runs an exec runner (warm bash) whose proxy socket
// answers when served and refuses when not.
func TestCaptureWarmBash(t *testing.T) {
	n := newCaptureNamespace(t, sandbox.PoolOptions{Size: 1, Idle: time.Minute}, false)
	if n.opts.NoLandlock {
		t.Skip("exec runners need the Landlock step")
	}
	e := &echoEgress{}
	t.Cleanup(e.Close)
	dir := t.TempDir()
	code := `if exec 3<>/dev/tcp/127.0.0.1/3128; then echo hi >&3; cat <&3; else echo refused; fi 2>/dev/null`
	for _, c := range []struct {
		egress sandbox.Egress
		want   string
	}{{e, "proxy hi\n"}, {nil, "refused\n"}} {
		spec := sandboxtest.WarmSpec(sandbox.WarmBash, dir, code)
		spec.Egress = c.egress
		sandboxtest.WaitReady(t, n, spec)
		hits := sandboxtest.KindHits(n, sandbox.WarmBash)
		got := sandboxtest.Run(t, n, spec)
		if got.Stdout != c.want || sandboxtest.KindHits(n, sandbox.WarmBash) != hits+1 {
			t.Errorf("served %v: got %q (stderr %q), want %q warm; pool %+v", c.egress != nil, got.Stdout, got.Stderr, c.want, n.PoolStats())
		}
	}
}

// TestCaptureNoLeaks makes cold, warm and forked runs, served and not, and
// expects the server to hold no more descriptors, processes or cgroups
// afterwards than before.
func TestCaptureNoLeaks(t *testing.T) {
	fdsBefore := sandboxtest.CountFDs(t)
	func() {
		e := &echoEgress{}
		defer e.Close()
		for _, fork := range []bool{false, true} {
			o := Options{OwnedRoot: sandboxtest.OwnedRoot, CaptureSpec: testCaptureSpec(t),
				Pool: sandbox.PoolOptions{Size: 1, Idle: time.Minute, Fork: fork}}
			n, err := New(context.Background(), o)
			if err != nil {
				t.Skipf("namespace backend unavailable: %v", err)
			}
			dir := t.TempDir()
			for i := range 6 {
				code := "print(1)"
				var egress sandbox.Egress
				if i%2 == 0 {
					egress = e
					code = "import socket; c = socket.create_connection(('127.0.0.1', 3128)); c.sendall(b'x'); c.recv(9); print(1)"
				}
				spec := sandboxtest.WarmSpec(sandbox.WarmPython, dir, code)
				spec.Egress = egress
				if i >= 4 {
					spec.Warm = "" // cold
				}
				if got := sandboxtest.Run(t, n, spec); got.Stdout != "1\n" {
					t.Errorf("run %d: %+v %q %q", i, got.Exit, got.Stdout, got.Stderr)
				}
			}
			_ = n.Close()
		}
	}()
	sandboxtest.CheckNoLeaks(t, fdsBefore)
}

// TestCaptureFilesPlaced refuses a captured file whose place, in a tree
// sandboxes see from the host, does not exist there.
func TestCaptureFilesPlaced(t *testing.T) {
	spec := &sandbox.CaptureSpec{DNS: true, Files: []sandbox.Mount{{Host: "/etc/hostname", Target: "/etc/ssl/no-such-file"}}}
	_, _, err := captureFiles(spec)
	if want := "lies in a directory sandboxes see from this host and must exist"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("got %v, want an error with %q", err, want)
	}
	spec.Files = []sandbox.Mount{{Host: "/etc/hostname", Target: "/etc/resolv.conf"}, {Host: "/etc/hostname", Target: "/etc/ssl/certs"}}
	files, placeholders, err := captureFiles(spec)
	want := []captureFile{{"/etc/hostname", "/etc/resolv.conf"}, {"/etc/hostname", "/etc/ssl/certs"}}
	if err != nil || !cmp.Equal(files, want, cmp.AllowUnexported(captureFile{})) || !cmp.Equal(placeholders, []string{"/etc/resolv.conf"}) {
		t.Fatalf("got %v %v %v, want %v and a placeholder for /etc/resolv.conf", files, placeholders, err, want)
	}
}

// TestCaptureIPLinkRefused runs iproute2 in a served sandbox: the network
// namespace belongs to the server's user namespace, so taking loopback
// down or adding an address fails, and loopback stays up (its state
// reads UNKNOWN when up, DOWN when not).
func TestCaptureIPLinkRefused(t *testing.T) {
	if _, err := os.Stat("/usr/sbin/ip"); err != nil {
		t.Skip("iproute2 is not installed")
	}
	n := newCaptureNamespace(t, sandbox.PoolOptions{}, false)
	e := &echoEgress{}
	t.Cleanup(e.Close)
	spec := sandbox.Spec{ID: "ip", Dir: t.TempDir(), Egress: e, Env: []string{"PATH=/usr/sbin:/usr/bin"},
		Argv: []string{"/bin/sh", "-c", "ip link set lo down 2>&1; ip addr add 10.0.0.1/8 dev lo 2>&1; ip -o link show lo | grep -o 'state [A-Z]*'"}}
	got := sandboxtest.Run(t, n, spec)
	want := "RTNETLINK answers: Operation not permitted\nRTNETLINK answers: Operation not permitted\n"
	if got.Stdout != want+"state UNKNOWN\n" || e.served() != 1 {
		t.Fatalf("got %q (stderr %q), want the changes refused and lo not down; %d captures served", got.Stdout, got.Stderr, e.served())
	}
}
