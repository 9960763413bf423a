// Package pgtest starts a throwaway PostgreSQL server for tests: its own
// cluster (initdb) in a temporary directory, listening only on a unix
// socket there, stopped and removed when the test ends. No system service
// is used or needed. As root, the cluster runs as the "postgres" user (the
// server refuses to run as root). Tests skip, with the reason, when the
// PostgreSQL server binaries are not installed (scripts/deps.sh installs
// them).
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
)

// binDir finds the directory holding initdb and pg_ctl: PATH first, then
// Debian's /usr/lib/postgresql/<version>/bin, newest version first.
func binDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	slices.SortFunc(dirs, func(a, b string) int { return versionOf(b) - versionOf(a) })
	if len(dirs) == 0 {
		return "", fmt.Errorf("PostgreSQL server binaries (initdb, pg_ctl) not found; install the postgresql package (scripts/deps.sh does)")
	}
	return filepath.Dir(dirs[0]), nil
}

func versionOf(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// Server is a running throwaway cluster.
type Server struct {
	dir, bin string
	port     int
	asUser   string // "" when running as the current user
}

// Start starts a cluster for t (skipping t when PostgreSQL is not
// installed) and returns it; it is stopped and removed at t's cleanup.
func Start(t testing.TB) *Server {
	t.Helper()
	s, skip, err := Launch()
	if skip != "" {
		t.Skip(skip)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a cluster for a whole test binary (TestMain); the caller
// stops it with Stop. skip says why it cannot run here (PostgreSQL not
// installed); err is a failure to start it.
func Launch() (_ *Server, skip string, retErr error) {
	bin, err := binDir()
	if err != nil {
		return nil, err.Error(), nil
	}
	s := &Server{bin: bin, port: 20000 + rand.IntN(40000)}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return nil, "running as root and no postgres user to run the PostgreSQL server as", nil
		}
		s.asUser = "postgres"
	}
	defer func() {
		if retErr != nil {
			s.Stop()
		}
	}()
	if err := s.init(); err != nil {
		return nil, "", err
	}
	if err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-o",
		fmt.Sprintf("-k %s -p %d -c listen_addresses='' -c fsync=off -c max_connections=200", s.dir, s.port), "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return nil, "", fmt.Errorf("%v\n%s", err, log)
	}
	return s, "", nil
}

// init makes the temporary directory (owned by the server's user) and
// the cluster in it.
func (s *Server) init() error {
	// /tmp rather than $TMPDIR: the socket path must stay short (about
	// 100 bytes) and, as root, the postgres user must reach it.
	parent := ""
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "codexec-pg-")
	if err != nil {
		return err
	}
	s.dir = dir
	if s.asUser != "" {
		u, _ := user.Lookup(s.asUser)
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	return s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync")
}

func (s *Server) data() string { return filepath.Join(s.dir, "data") }

// run runs one of the server's programs as its user.
func (s *Server) run(prog string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, prog), args...)
	if s.asUser != "" {
		cmd = exec.Command("runuser", append([]string{"-u", s.asUser, "--", filepath.Join(s.bin, prog)}, args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", prog, err, out)
	}
	return nil
}

// Stop stops the cluster and removes its directory.
func (s *Server) Stop() {
	if s.dir == "" {
		return
	}
	_ = s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	_ = os.RemoveAll(s.dir)
}

// DSN is the postgres:// URL of database db on the server.
func (s *Server) DSN(db string) string {
	q := url.Values{"host": {s.dir}, "port": {strconv.Itoa(s.port)}, "user": {"postgres"}, "sslmode": {"disable"}}
	return "postgres:///" + db + "?" + q.Encode()
}

// NewDatabase creates an empty database on the server and returns its DSN,
// so each test starts from nothing.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("t%d", rand.Int64())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	return s.DSN(name)
}
