// Package s3test starts a real S3-compatible server for tests: Versity's S3
// gateway (versitygw) serving a fresh POSIX directory on a free loopback
// port. It is installed from the Go module proxy by scripts/deps.sh (go
// install github.com/versity/versitygw/cmd/versitygw@v1.8.0); where it is
// missing, Start skips the test and says how to install it.
package s3test

import (
	"fmt"
	"go/build"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Version is the versitygw release scripts/deps.sh installs.
const Version = "v1.8.0"

// Server is a running gateway. Its root user's keys are AccessKey and
// SecretKey; Dir is the directory its buckets live in (one subdirectory
// each).
type Server struct {
	// Endpoint is host:port of the S3 API (plain http).
	Endpoint             string
	AccessKey, SecretKey string
	Dir                  string
}

// URL is the endpoint as an http URL.
func (s *Server) URL() string { return "http://" + s.Endpoint }

// Binary returns the path of versitygw (on PATH, else in GOPATH/bin), or ""
// when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	p := filepath.Join(build.Default.GOPATH, "bin", "versitygw")
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
		return p
	}
	return ""
}

// Start runs a gateway for the test and stops it at cleanup; it skips the
// test when versitygw is not installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skipf("versitygw is not installed (scripts/deps.sh installs it: go install github.com/versity/versitygw/cmd/versitygw@%s)", Version)
	}
	var lastErr error
	for range 3 { // the free port may be taken between probe and start
		s, err := start(t, bin)
		if err == nil {
			return s
		}
		lastErr = err
	}
	t.Fatalf("versitygw did not start: %v", lastErr)
	return nil
}

func start(t testing.TB, bin string) (*Server, error) {
	s := &Server{Endpoint: freePort(t), AccessKey: "codexec-test", SecretKey: "codexec-test-secret", Dir: t.TempDir()}
	args := []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.Endpoint, "--quiet", "posix"}
	if !xattrs(s.Dir) {
		args = append(args, "--sidecar", t.TempDir()) // object metadata beside, not in xattrs
	}
	cmd := exec.Command(bin, append(args, s.Dir)...)
	// Its own environment only: versitygw reads ROOT_* and VGW_* variables.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	log := &logBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	if err := waitReady(s.URL(), exited); err != nil {
		stop()
		return nil, fmt.Errorf("%w\n%s", err, log.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("versitygw log:\n%s", log.String())
		}
	})
	return s, nil
}

// freePort returns a loopback host:port nothing listens on right now.
func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// xattrs reports whether dir's file system takes user extended attributes
// (where the gateway keeps object metadata by default).
func xattrs(dir string) bool {
	p := filepath.Join(dir, ".xattr-probe")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		return false
	}
	defer os.Remove(p)
	return unix.Setxattr(p, "user.codexec-probe", []byte("1"), 0) == nil
}

// waitReady polls the endpoint until it answers HTTP (any status: an
// unsigned request is refused, which proves it serves S3).
func waitReady(url string, exited <-chan struct{}) error {
	deadline := time.Now().Add(20 * time.Second)
	c := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("versitygw exited")
		default:
		}
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("versitygw did not answer on %s within 20s", url)
}

// logBuffer collects the gateway's output for failure messages.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
