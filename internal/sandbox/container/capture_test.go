//go:build linux

package container

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/sandbox"
	"github.com/codexec/codexec/internal/sandbox/sandboxtest"
)

// testEgress serves captures the way the tests need: the proxy and DNS
// over TCP echo what they read, DNS over UDP answers "dns-reply", and a
// captured port writes the local address the connection arrived at (the
// stub address the program dialled).
type testEgress struct {
	served atomic.Int32
	mu     sync.Mutex
	caps   []*sandbox.Capture
	wg     sync.WaitGroup
}

func (e *testEgress) Serve(c *sandbox.Capture) {
	e.served.Add(1)
	e.mu.Lock()
	e.caps = append(e.caps, c)
	e.mu.Unlock()
	e.accept(c.Proxy, echo)
	e.accept(c.DNSTCP, echo)
	for _, l := range c.Ports {
		e.accept(l, func(conn net.Conn) { _, _ = conn.Write([]byte(conn.LocalAddr().String())) })
	}
	e.wg.Go(func() {
		buf := make([]byte, 512)
		for {
			_, from, err := c.DNS.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = c.DNS.WriteTo([]byte("dns-reply"), from)
		}
	})
}

// accept serves each connection of l with fn until l is closed.
func (e *testEgress) accept(l net.Listener, fn func(net.Conn)) {
	e.wg.Go(func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			fn(conn)
			_ = conn.Close()
		}
	})
}

func echo(conn net.Conn) {
	buf := make([]byte, 64)
	n, _ := conn.Read(buf)
	_, _ = conn.Write(buf[:n])
}

// close closes every capture served and waits for the servers to end.
func (e *testEgress) close() {
	e.mu.Lock()
	for _, c := range e.caps {
		_ = c.Close()
	}
	e.mu.Unlock()
	e.wg.Wait()
}

// probeProgram connects from inside the container and prints, as JSON,
// what each attempt got ("ok:<reply>" or "err:<errno>") and the longest
// time any attempt took.
const probeProgram = `
import json, socket, time
out, slowest = {}, 0.0
def attempt(name, fn):
    global slowest
    t = time.time()
    try:
        out[name] = "ok:" + fn()
    except OSError as e:
        out[name] = "err:" + str(e.errno)
    slowest = max(slowest, time.time() - t)
def tcp(host, port, send=b""):
    def fn():
        with socket.create_connection((host, port), timeout=5) as s:
            s.sendall(send)
            return s.recv(100).decode()
    return fn
def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(5)
        s.connect(("127.0.0.1", 53))
        s.send(b"query")
        return s.recv(100).decode()
attempt("proxy", tcp("127.0.0.1", 3128, b"ping"))
attempt("dns", udp)
attempt("dns_tcp", tcp("127.0.0.1", 53, b"query"))
attempt("port", tcp("127.64.0.9", 443))
attempt("outside", tcp("1.1.1.1", 443))
out["resolv"] = open("/etc/resolv.conf").read()
out["slow"] = "yes" if slowest > 2 else "no"
print(json.dumps(out, sort_keys=True))
`

// testCaptureSpec is the capture the tests give the backend, with its
// resolver configuration written below dir.
func testCaptureSpec(t testing.TB, dir string) *sandbox.CaptureSpec {
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return &sandbox.CaptureSpec{ProxyPort: 3128, Ports: []int{80, 443}, DNS: true,
		Files: []sandbox.Mount{{Host: resolv, Target: "/etc/resolv.conf", ReadOnly: true}}}
}

// What probeProgram prints when its capture is served, and when it is
// closed (errno 101: network unreachable, 111: connection refused).
var (
	probeServed = map[string]string{"proxy": "ok:ping", "dns": "ok:dns-reply", "dns_tcp": "ok:query",
		"port": "ok:127.64.0.9:443", "outside": "err:101", "resolv": "nameserver 127.0.0.1\n", "slow": "no"}
	probeRefused = map[string]string{"proxy": "err:111", "dns": "err:111", "dns_tcp": "err:111",
		"port": "err:111", "outside": "err:101", "resolv": "nameserver 127.0.0.1\n", "slow": "no"}
)

// TestContainerCapture checks that a program in a container, cold or warm,
// reaches the capture's sockets and nothing else, that the run's egress
// serves them exactly once, and that without an egress the same
// connections are refused at once.
func TestContainerCapture(t *testing.T) {
	served, refused := probeServed, probeRefused
	for _, kind := range []string{"", sandbox.WarmPython} {
		name := map[string]string{"": "cold", sandbox.WarmPython: "warm"}[kind]
		t.Run(name, func(t *testing.T) {
			fdsBefore := sandboxtest.CountFDs(t)
			c := newTestContainerWith(t, func(o *Options) {
				o.CaptureSpec = testCaptureSpec(t, t.TempDir())
				if kind != "" {
					o.Pool.Size = 1
				}
			})
			for _, tc := range []struct {
				name   string
				egress bool
				want   map[string]string
			}{{"egress", true, served}, {"no egress", false, refused}} {
				t.Run(tc.name, func(t *testing.T) {
					e := &testEgress{}
					spec := sandboxtest.WarmSpec(kind, t.TempDir(), probeProgram)
					if tc.egress {
						spec.Egress = e
					}
					got := runProbe(t, c, spec)
					e.close()
					if diff := cmp.Diff(tc.want, got); diff != "" {
						t.Errorf("what the program reached (-want +got):\n%s", diff)
					}
					if want := map[bool]int32{true: 1, false: 0}[tc.egress]; e.served.Load() != want {
						t.Errorf("Serve called %d times, want %d", e.served.Load(), want)
					}
				})
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			sandboxtest.CheckNoLeaks(t, fdsBefore)
		})
	}
}

// nodeProbe is probeProgram's TCP part for node.
const nodeProbe = `
const net = require("net"), fs = require("fs");
const out = {}; let slowest = 0;
function tcp(name, host, port, send) {
  return new Promise((done) => {
    const t = Date.now(), s = net.connect(port, host);
    const end = (v) => { out[name] = v; slowest = Math.max(slowest, Date.now() - t); s.destroy(); done(); };
    s.setTimeout(5000, () => end("err:timeout"));
    s.on("connect", () => s.write(send));
    s.on("data", (d) => end("ok:" + d));
    s.on("error", (e) => end("err:" + Math.abs(e.errno)));
  });
}
(async () => {
  await tcp("proxy", "127.0.0.1", 3128, "ping");
  await tcp("port", "127.64.0.9", 443, "");
  await tcp("outside", "1.1.1.1", 443, "");
  out.resolv = fs.readFileSync("/etc/resolv.conf", "utf8");
  out.slow = slowest > 2000 ? "yes" : "no";
  console.log(JSON.stringify(out));
})();
`

// TestContainerCaptureWarmNode checks a warm node container's capture,
// served and refused.
func TestContainerCaptureWarmNode(t *testing.T) {
	fdsBefore := sandboxtest.CountFDs(t)
	c := newTestContainerWith(t, func(o *Options) {
		o.CaptureSpec = testCaptureSpec(t, t.TempDir())
		o.Pool.Size = 1
	}, "node")
	for _, tc := range []struct {
		egress bool
		want   map[string]string
	}{
		{true, map[string]string{"proxy": "ok:ping", "port": "ok:127.64.0.9:443", "outside": "err:101", "resolv": "nameserver 127.0.0.1\n", "slow": "no"}},
		{false, map[string]string{"proxy": "err:111", "port": "err:111", "outside": "err:101", "resolv": "nameserver 127.0.0.1\n", "slow": "no"}},
	} {
		e := &testEgress{}
		spec := sandboxtest.WarmSpec(sandbox.WarmNode, t.TempDir(), nodeProbe)
		if tc.egress {
			spec.Egress = e
		}
		got := runProbe(t, c, spec)
		e.close()
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("egress %v: what the program reached (-want +got):\n%s", tc.egress, diff)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	sandboxtest.CheckNoLeaks(t, fdsBefore)
}

// runProbe runs spec (the probe program) in c, warm when spec asks for
// it and a runner is ready, and returns what the program printed.
func runProbe(t *testing.T, c *Backend, spec sandbox.Spec) map[string]string {
	t.Helper()
	hits := sandboxtest.PoolHits(c)
	if spec.Warm != "" {
		c.Prewarm(spec)
		if _, ok := c.AwaitWarm(spec.Warm, 30*time.Second); !ok {
			t.Fatal("no warm runner became ready")
		}
	}
	r := sandboxtest.Run(t, c, spec)
	if r.Exit.Code != 0 {
		t.Fatalf("probe: %+v\nstdout: %s\nstderr: %s", r.Exit, r.Stdout, r.Stderr)
	}
	if spec.Warm != "" && sandboxtest.PoolHits(c) != hits+1 {
		t.Errorf("the run was not served warm")
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(r.Stdout), &got); err != nil {
		t.Fatalf("probe output %q: %v", r.Stdout, err)
	}
	return got
}

// TestContainerCaptureNoLeak checks that cold runs with a capture, served
// or not, leave the server with exactly the descriptors it had.
func TestContainerCaptureNoLeak(t *testing.T) {
	c := newTestContainerWith(t, func(o *Options) { o.CaptureSpec = testCaptureSpec(t, t.TempDir()) })
	e := &testEgress{}
	run := func(egress bool) {
		spec := sandboxtest.WarmSpec("", t.TempDir(), "import socket; socket.socket().connect_ex(('127.0.0.1', 3128))")
		if egress {
			spec.Egress = e
		}
		if r := sandboxtest.Run(t, c, spec); r.Exit.Code != 0 {
			t.Fatalf("run: %+v %s", r.Exit, r.Stderr)
		}
	}
	run(true) // first run: lazily opened descriptors of the process
	e.close()
	before := sandboxtest.CountFDs(t)
	for i := range 4 {
		run(i%2 == 0)
	}
	e.close()
	if after := sandboxtest.CountFDs(t); after != before {
		t.Errorf("descriptors: %d before, %d after 4 runs", before, after)
	}
}

// TestContainerCaptureInspect checks the cold path with a CLI that is not
// podman's own (no pid file: the container's pid comes from inspect),
// using podman under the name docker.
func TestContainerCaptureInspect(t *testing.T) {
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("needs podman to stand in for another CLI")
	}
	docker := filepath.Join(t.TempDir(), "docker")
	if err := os.Symlink(podman, docker); err != nil {
		t.Fatal(err)
	}
	c := newTestContainerWith(t, func(o *Options) {
		o.CLI = docker
		o.CaptureSpec = testCaptureSpec(t, t.TempDir())
	})
	if c.podman() {
		t.Fatal("the CLI named docker was taken for podman")
	}
	e := &testEgress{}
	spec := sandboxtest.WarmSpec("", t.TempDir(), probeProgram)
	spec.Egress = e
	got := runProbe(t, c, spec)
	e.close()
	if diff := cmp.Diff(probeServed, got); diff != "" {
		t.Errorf("what the program reached (-want +got):\n%s", diff)
	}
}

// TestContainerCaptureRollback checks that a gated container that never
// comes up (the engine refuses its 1-byte memory limit) makes Start fail
// with the reason, serves nothing and leaves no descriptor behind.
func TestContainerCaptureRollback(t *testing.T) {
	c := newTestContainerWith(t, func(o *Options) { o.CaptureSpec = testCaptureSpec(t, t.TempDir()) })
	e := &testEgress{}
	spec := sandboxtest.WarmSpec("", t.TempDir(), "pass")
	spec.Egress = e
	spec.Limits.MemoryBytes = 1
	before := sandboxtest.CountFDs(t)
	p, err := c.Start(context.Background(), spec)
	if err == nil {
		_ = p.Release(time.Second)
		t.Fatal("a container refused by the engine started")
	}
	t.Logf("start: %v", err)
	if !strings.Contains(err.Error(), "did not come up") {
		t.Errorf("error %q does not say the container did not come up", err)
	}
	if e.served.Load() != 0 {
		t.Errorf("Serve called for a container that never came up")
	}
	if after := sandboxtest.CountFDs(t); after != before {
		t.Errorf("descriptors: %d before, %d after", before, after)
	}
	if gates, _ := filepath.Glob(filepath.Join(c.warmRoot, "g-*")); len(gates) > 0 {
		t.Errorf("gate left: %v", gates)
	}
}

// TestContainerCaptureOptions checks that a capture the backend cannot
// honour is refused before anything starts, with the reason.
func TestContainerCaptureOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"host network", Options{Network: "host", CaptureSpec: &sandbox.CaptureSpec{ProxyPort: 3128}}, "container network none"},
		{"proxy port twice", Options{Network: "none", CaptureSpec: &sandbox.CaptureSpec{ProxyPort: 443, Ports: []int{443}}}, "asked for twice"},
		{"DNS port captured", Options{Network: "none", CaptureSpec: &sandbox.CaptureSpec{DNS: true, Ports: []int{53}}}, "asked for twice"},
		{"port out of range", Options{Network: "none", CaptureSpec: &sandbox.CaptureSpec{Ports: []int{70000}}}, "out of range"},
		{"disabled", Options{Network: "host", CaptureSpec: &sandbox.CaptureSpec{}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCapture(tc.o)
			if got := errString(err); !strings.Contains(got, tc.want) || (tc.want == "") != (err == nil) {
				t.Errorf("checkCapture: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// BenchmarkContainerColdCapture measures cold container runs of
// `python3 -c pass` without and with a network capture (the gate, the pid
// and the sockets), alternating the two so that the host's load weighs on
// both alike, and reports their medians and ratio:
//
//	go test -run '^$' -bench ContainerColdCapture -benchtime 8x ./internal/sandbox/container/
func BenchmarkContainerColdCapture(b *testing.B) {
	plain := newTestContainerWith(b, func(*Options) {})
	captured := newTestContainerWith(b, func(o *Options) { o.CaptureSpec = testCaptureSpec(b, b.TempDir()) })
	e := &testEgress{}
	defer e.close()
	spec := sandboxtest.WarmSpec("", b.TempDir(), "pass")
	spec.Egress = e
	var times [2][]time.Duration
	for b.Loop() {
		for i, c := range []*Backend{plain, captured} {
			t0 := time.Now()
			p, err := c.Start(context.Background(), spec)
			if err != nil {
				b.Fatal(err)
			}
			if ex, err := p.Wait(); err != nil || ex.Code != 0 {
				b.Fatalf("run: %+v %v", ex, err)
			}
			times[i] = append(times[i], time.Since(t0))
			_ = p.Release(time.Second)
		}
	}
	m0, m1 := median(times[0]), median(times[1])
	b.ReportMetric(float64(m0.Milliseconds()), "plain-ms")
	b.ReportMetric(float64(m1.Milliseconds()), "capture-ms")
	b.ReportMetric(float64(m1)/float64(m0), "ratio")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestCaptureIn checks captureIn against a process in a network namespace
// of its own (no container engine needed): the sockets are made there, a
// failure inside the namespace closes what was made, no thread of the
// server is left in the namespace, and the server's own namespace is
// refused.
func TestCaptureIn(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("entering another network namespace needs root")
	}
	pid := startInNetNS(t)
	fdsBefore := sandboxtest.CountFDs(t)
	cs := &sandbox.CaptureSpec{ProxyPort: 3128, Ports: []int{80, 443}, DNS: true}
	c, err := captureIn(pid, cs)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"proxy": c.Proxy.Addr().String(), "dns": c.DNS.LocalAddr().String(),
		"dns_tcp": c.DNSTCP.Addr().String(), "80": c.Ports[80].Addr().String(), "443": c.Ports[443].Addr().String()}
	want := map[string]string{"proxy": "127.0.0.1:3128", "dns": "127.0.0.1:53", "dns_tcp": "127.0.0.1:53",
		"80": "0.0.0.0:80", "443": "0.0.0.0:443"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("captured sockets (-want +got):\n%s", diff)
	}
	// A free proxy port, then a port in use there: the proxy's socket is
	// closed again (the third capture can take its port).
	if again, err := captureIn(pid, &sandbox.CaptureSpec{ProxyPort: 3129, Ports: []int{443}}); err == nil || !strings.Contains(err.Error(), "address already in use") {
		_ = again.Close()
		t.Errorf("second capture in one namespace: %v, want address already in use", err)
	}
	third, err := captureIn(pid, &sandbox.CaptureSpec{ProxyPort: 3129})
	if err != nil {
		t.Errorf("the failed capture kept its proxy port: %v", err)
	}
	_ = third.Close()
	checkThreadsHome(t)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if after := sandboxtest.CountFDs(t); after != fdsBefore {
		t.Errorf("descriptors: %d before, %d after", fdsBefore, after)
	}
	if _, err := captureIn(os.Getpid(), cs); err == nil || !strings.Contains(err.Error(), "shares the server's network namespace") {
		t.Errorf("capture in the server's own namespace: %v, want refused", err)
	}
}

// startInNetNS starts a process in a new network namespace (lo down, no
// other interface) and returns its pid once it is there.
func startInNetNS(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := cmd.Start(); err != nil {
		t.Skipf("a process in a new network namespace: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}

// checkThreadsHome fails the test if any thread of the process is in a
// network namespace other than the process's.
func checkThreadsHome(t *testing.T) {
	t.Helper()
	home, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/ns/net")
	for _, p := range tasks {
		if ns, err := os.Readlink(p); err == nil && ns != home {
			t.Errorf("thread %s is in network namespace %s, not the server's %s", p, ns, home)
		}
	}
}
