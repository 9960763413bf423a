package egress

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/codexec/codexec/internal/egress/intercept"
	"github.com/codexec/codexec/internal/sandbox"
)

// Default limits for one run (Limits fields left zero).
const (
	// DefaultMaxOpenConns bounds connections open at once.
	DefaultMaxOpenConns = 256
	// DefaultMaxConns bounds connections over the whole run.
	DefaultMaxConns = 4096
	// DefaultMaxBytes bounds bytes sent plus received over the whole run.
	DefaultMaxBytes = 1 << 30
	// DefaultIdleTimeout ends a connection with no byte either way for
	// that long.
	DefaultIdleTimeout = 60 * time.Second
)

// ProxyPort is the port of the explicit proxy inside every sandbox
// (127.0.0.1:3128, as in HTTP_PROXY).
const ProxyPort = 3128

// Paths inside the sandbox of the files Capture places there.
const (
	ResolvConfPath = "/etc/resolv.conf"
	CABundlePath   = "/etc/ssl/certs/ca-certificates.crt"
)

// Limits bound one run's network. Zero fields take the Default values;
// a negative field is refused by New.
type Limits struct {
	MaxConns     int
	MaxOpenConns int
	MaxBytes     int64
	IdleTimeout  time.Duration
}

// withDefaults fills zero fields.
func (l Limits) withDefaults() Limits {
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxOpenConns == 0 {
		l.MaxOpenConns = DefaultMaxOpenConns
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

func (l Limits) check() error {
	if l.MaxConns < 0 || l.MaxOpenConns < 0 || l.MaxBytes < 0 || l.IdleTimeout < 0 {
		return errors.New("egress limits must not be negative (zero means the default)")
	}
	return nil
}

// Config is the server's egress configuration, parsed from settings.
type Config struct {
	// Ceiling is the most any run may be allowed (CODEXEC_EGRESS_ALLOW).
	Ceiling Policy
	// Principals are narrower ceilings per principal; each must lie
	// within Ceiling. A principal without an entry gets Ceiling.
	Principals map[string]Policy
	// DefaultCeiling gives a run that asks for no network the caller's
	// ceiling (CODEXEC_EGRESS_DEFAULT=ceiling) instead of none.
	DefaultCeiling bool
	// Pins map a host name to the address the proxy dials for it, even a
	// loopback or private one (CODEXEC_EGRESS_RESOLVE).
	Pins map[string]netip.Addr
	// Credentials are headers the proxy adds (CODEXEC_EGRESS_CREDENTIALS).
	Credentials []Credential
	// CAFile holds extra PEM CAs for upstream TLS, also trusted in the
	// sandbox (CODEXEC_EGRESS_CA_FILE).
	CAFile string
	// StateDir keeps the interception CA and the files placed in
	// sandboxes; created 0700 when missing.
	StateDir string
	// Limits bound each run.
	Limits Limits
}

// Entry is the audit of one destination of a run.
type Entry struct {
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	// Reason says why connections were denied ("not in policy", "private
	// address", "sni mismatch", "ip literal", "no name", "limit",
	// "upstream unreachable"), or why an allowed one was cut ("limit").
	Reason        string `json:"reason,omitempty"`
	Connections   int    `json:"connections"`
	BytesSent     int64  `json:"bytes_sent"`
	BytesReceived int64  `json:"bytes_received"`
	// Intercepted says TLS was terminated to add a credential.
	Intercepted bool `json:"intercepted,omitempty"`
}

// Service holds the server's egress configuration and what every run's
// binding shares (CA, upstream roots, sandbox files, counters). A nil
// *Service is egress off: every method works and allows nothing.
type Service struct {
	cfg      Config
	ca       *intercept.Authority
	creds    *credentialStore
	roots    *x509.CertPool
	files    []sandbox.Mount
	resolver *net.Resolver
	// dialer dials resolved addresses (never names).
	dialer  net.Dialer
	allowed atomic.Uint64
	denied  atomic.Uint64
}

// New checks cfg and prepares the service: the interception CA, the
// roots for upstream TLS and the files placed in sandboxes. With an empty
// ceiling it returns nil (egress off) unless something else is set that
// needs one, which is an error.
func New(cfg Config) (*Service, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	if cfg.Ceiling.None() {
		return nil, nil
	}
	cfg.Limits = cfg.Limits.withDefaults()
	s := &Service{cfg: cfg, resolver: net.DefaultResolver}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkConfig refuses settings that contradict each other, naming the
// setting to fix.
func checkConfig(cfg Config) error {
	if err := cfg.Limits.check(); err != nil {
		return err
	}
	if cfg.Ceiling.None() {
		if len(cfg.Credentials) > 0 {
			return errors.New("CODEXEC_EGRESS_CREDENTIALS is set but CODEXEC_EGRESS_ALLOW is empty: credentials need hosts a run may reach")
		}
		for name, p := range cfg.Principals {
			if !p.None() {
				return fmt.Errorf("principal %q has a network ceiling but CODEXEC_EGRESS_ALLOW is empty: no run may reach any host", name)
			}
		}
		return nil
	}
	if cfg.StateDir == "" {
		return errors.New("egress needs a state directory for its CA and sandbox files (the server's data directory)")
	}
	return checkNested(cfg)
}

// checkNested refuses per-principal ceilings and credential hosts that
// reach beyond the server's ceiling.
func checkNested(cfg Config) error {
	for name, p := range cfg.Principals {
		if err := p.Within(cfg.Ceiling); err != nil {
			return fmt.Errorf("principal %q network ceiling: %w", name, err)
		}
	}
	for _, c := range cfg.Credentials {
		if err := (Policy{Allow: []Rule{c.Host}}).Within(cfg.Ceiling); err != nil {
			return fmt.Errorf("credential for %s in CODEXEC_EGRESS_CREDENTIALS: %w", c.Host, err)
		}
	}
	return nil
}

// prepare creates the state directory, the CA, the upstream roots and the
// sandbox files, in that order (each needs the one before).
func (s *Service) prepare() error {
	if err := os.MkdirAll(s.cfg.StateDir, 0o700); err != nil {
		return fmt.Errorf("egress state directory: %w", err)
	}
	ca, err := intercept.NewAuthority(s.cfg.StateDir)
	if err != nil {
		return err
	}
	s.ca = ca
	if s.creds, err = newCredentialStore(s.cfg.Credentials); err != nil {
		return err
	}
	extra, err := readCAFile(s.cfg.CAFile)
	if err != nil {
		return err
	}
	if s.roots, err = upstreamRoots(extra); err != nil {
		return err
	}
	s.files, err = writeSandboxFiles(s.cfg.StateDir, ca.PEM(), extra)
	return err
}

// Enabled reports whether any run may have network at all.
func (s *Service) Enabled() bool { return s != nil && !s.cfg.Ceiling.None() }

// Capture is what every isolated sandbox needs for egress: the proxy
// port, the ports any ceiling names (captured for programs that ignore
// proxy variables), the DNS stub and the resolver and CA bundle files. It
// is nil when egress is off. Port 53 and ProxyPort are never among Ports
// (those sockets exist already on 127.0.0.1).
func (s *Service) Capture() *sandbox.CaptureSpec {
	if !s.Enabled() {
		return nil
	}
	return &sandbox.CaptureSpec{
		ProxyPort: ProxyPort,
		Ports:     s.capturedPorts(),
		DNS:       true,
		Files:     slices.Clone(s.files),
	}
}

func (s *Service) capturedPorts() []int {
	seen := map[int]bool{}
	for _, r := range s.cfg.Ceiling.Allow {
		for _, p := range r.ports() {
			if p != ProxyPort && p != 53 {
				seen[p] = true
			}
		}
	}
	ports := make([]int, 0, len(seen))
	for p := range seen {
		ports = append(ports, p)
	}
	sort.Ints(ports)
	return ports
}

// Ceiling is the most principal's runs may be allowed.
func (s *Service) Ceiling(principal string) Policy {
	if s == nil {
		return Policy{}
	}
	if p, ok := s.cfg.Principals[principal]; ok {
		return p
	}
	return s.cfg.Ceiling
}

// Resolve gives the policy of a run principal starts. requested nil means
// the call asked for nothing: no network, or the ceiling when the
// operator set CODEXEC_EGRESS_DEFAULT=ceiling. A requested policy must lie
// within the principal's ceiling; otherwise the error (an *OutsideError)
// names the first rule outside it.
func (s *Service) Resolve(principal string, requested *Policy) (Policy, error) {
	if requested == nil {
		if s != nil && s.cfg.DefaultCeiling {
			return clonePolicy(s.Ceiling(principal)), nil
		}
		return Policy{}, nil
	}
	if requested.None() {
		return Policy{}, nil
	}
	if !s.Enabled() {
		return Policy{}, errors.New("no network is allowed on this server (CODEXEC_EGRESS_ALLOW is empty): remove network.allow, or ask the operator to set CODEXEC_EGRESS_ALLOW")
	}
	if err := requested.Within(s.Ceiling(principal)); err != nil {
		return Policy{}, err
	}
	return clonePolicy(*requested), nil
}

func clonePolicy(p Policy) Policy { return Policy{Allow: slices.Clone(p.Allow)} }

// credentialFor returns the credential principal's connections to
// host:port get, with its value; false when none applies.
func (s *Service) credentialFor(principal, host string, port int) (*Credential, string, bool) {
	return s.creds.match(principal, host, port)
}

// Stats returns how many connections were allowed and denied since the
// server started, over every run (for metrics; no host names).
func (s *Service) Stats() (allowed, denied uint64) {
	if s == nil {
		return 0, 0
	}
	return s.allowed.Load(), s.denied.Load()
}
