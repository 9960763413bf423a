package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// Remote holds the settings of the Streamable HTTP transport.
// HTTPAddr empty means stdio, the default.
type Remote struct {
	// HTTPAddr is host:port to serve MCP over HTTP on (flag --http).
	HTTPAddr string
	// TLSCert and TLSKey are PEM files; both or neither.
	TLSCert, TLSKey string
	// AuthTokens is the bearer token file (token or sha256 → principal).
	AuthTokens string
	// OAuthIssuer enables JWT access tokens issued by this authorization
	// server; OAuthJWKSURL is its key set (default: discovered from the
	// issuer's metadata). ResourceURL is this server's public /mcp URL, the
	// audience tokens must name.
	OAuthIssuer, OAuthJWKSURL, ResourceURL string
	OAuthScopes                            []string
	// AllowedOrigins are browser origins allowed to call /mcp cross-origin;
	// AllowedHosts, when set, are the only Host header values accepted.
	AllowedOrigins, AllowedHosts []string
	// MaxBodyBytes bounds one HTTP request body.
	MaxBodyBytes int64
	// MaxMCPSessionsPerPrincipal bounds the MCP sessions one principal
	// holds open over HTTP (0 = unlimited).
	MaxMCPSessionsPerPrincipal int
	// ShutdownGrace is how long running calls may finish after SIGTERM
	// before they are killed.
	ShutdownGrace time.Duration
	// TransferURLTTL is how long an upload_url or download_url
	// (transfer "url") may be used.
	TransferURLTTL time.Duration
	// TransferListen is, over stdio, the loopback host:port transfer URLs
	// are served on, opened at the first transfer "url" call; "off" turns
	// transfer "url" off over stdio. Unused over HTTP, where the MCP
	// listener serves them.
	TransferListen string
}

// httpAlias is the short flag name the issue asks for (--http ADDR).
const httpAlias = "http"

func init() {
	settings = append(settings, remoteSettings...)
}

var remoteSettings = []setting{
	{"CODEXEC_HTTP_ADDR", "", "serve MCP Streamable HTTP on host:port instead of stdio (flag alias --http)", str(func(c *Config) *string { return &c.Remote.HTTPAddr })},
	{"CODEXEC_TLS_CERT", "", "TLS certificate (PEM) for --http; needs CODEXEC_TLS_KEY", str(func(c *Config) *string { return &c.Remote.TLSCert })},
	{"CODEXEC_TLS_KEY", "", "TLS private key (PEM) for --http", str(func(c *Config) *string { return &c.Remote.TLSKey })},
	{"CODEXEC_AUTH_TOKENS", "", "bearer token file: lines 'TOKEN PRINCIPAL' or 'sha256:HEX PRINCIPAL'; reloaded on change", str(func(c *Config) *string { return &c.Remote.AuthTokens })},
	{"CODEXEC_OAUTH_ISSUER", "", "OAuth 2.1 authorization server issuer URL: accept its JWT access tokens", str(func(c *Config) *string { return &c.Remote.OAuthIssuer })},
	{"CODEXEC_OAUTH_JWKS_URL", "", "JWKS URL of the issuer (default: jwks_uri of its metadata)", str(func(c *Config) *string { return &c.Remote.OAuthJWKSURL })},
	{"CODEXEC_OAUTH_SCOPES", "", "comma-separated scopes every access token must carry", list(func(c *Config) *[]string { return &c.Remote.OAuthScopes })},
	{"CODEXEC_RESOURCE_URL", "", "public URL of this server's /mcp: token audience and metadata resource (default http(s)://ADDR/mcp)", str(func(c *Config) *string { return &c.Remote.ResourceURL })},
	{"CODEXEC_ALLOWED_ORIGINS", "", "comma-separated browser origins allowed to call /mcp cross-origin", list(func(c *Config) *[]string { return &c.Remote.AllowedOrigins })},
	{"CODEXEC_ALLOWED_HOSTS", "", "comma-separated Host header values accepted (unset = any; loopback binds always check)", list(func(c *Config) *[]string { return &c.Remote.AllowedHosts })},
	{"CODEXEC_HTTP_MAX_BODY", "4m", "largest HTTP request body", bytesize(func(c *Config) *int64 { return &c.Remote.MaxBodyBytes })},
	{"CODEXEC_MAX_MCP_SESSIONS_PER_PRINCIPAL", "64", "MCP sessions (Mcp-Session-Id) one principal may hold open over HTTP; beyond, a new one closes the least recently used idle one, or gets 429 when all are busy (0 = unlimited)", nonNegative(func(c *Config) *int { return &c.Remote.MaxMCPSessionsPerPrincipal })},
	{"CODEXEC_TRANSFER_URL_TTL", "5m", "how long the single-use upload_url/download_url of transfer \"url\" stay valid (e.g. 5m, 30s)", duration(func(c *Config) *time.Duration { return &c.Remote.TransferURLTTL })},
	{"CODEXEC_TRANSFER_LISTEN", "127.0.0.1:0", "over stdio, the loopback host:port that serves the upload_url/download_url of transfer \"url\", opened at the first such call (port 0 picks a free one; off: bytes only in the calls)", str(func(c *Config) *string { return &c.Remote.TransferListen })},
	{"CODEXEC_SHUTDOWN_GRACE_MS", "30000", "on SIGTERM, time running calls get to finish before they are killed, in milliseconds", millis(func(c *Config) *time.Duration { return &c.Remote.ShutdownGrace })},
}

// AuthEnabled reports whether HTTP requests must carry a bearer token.
func (r Remote) AuthEnabled() bool { return r.AuthTokens != "" || r.OAuthIssuer != "" }

// Scheme is "https" when TLS is configured, else "http".
func (r Remote) Scheme() string {
	if r.TLSCert != "" {
		return "https"
	}
	return "http"
}

// Resource is the server's resource identifier: ResourceURL, or the /mcp URL
// derived from the listen address.
func (r Remote) Resource() string {
	if r.ResourceURL != "" {
		return strings.TrimRight(r.ResourceURL, "/")
	}
	host, port, _ := net.SplitHostPort(r.HTTPAddr)
	if host == "" {
		host = "127.0.0.1" // an empty host binds loopback
	}
	return r.Scheme() + "://" + net.JoinHostPort(host, port) + "/mcp"
}

// TransferOff is the CODEXEC_TRANSFER_LISTEN value that turns transfer
// URLs off over stdio.
const TransferOff = "off"

// checkTransferListen accepts "off" or a loopback host:port: the transfer
// listener has no authentication but its URLs' secrets, so over stdio it
// is not offered beyond this machine (serve --http for that).
func (r Remote) checkTransferListen() error {
	if r.TransferListen == TransferOff {
		return nil
	}
	host, _, err := net.SplitHostPort(r.TransferListen)
	ip := net.ParseIP(host)
	if err != nil || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return fmt.Errorf("CODEXEC_TRANSFER_LISTEN must be off or a loopback host:port such as 127.0.0.1:0, got %q", r.TransferListen)
	}
	return nil
}

func (r Remote) validate() error {
	var errs []error
	if err := r.checkTransferListen(); err != nil {
		errs = append(errs, err)
	}
	if r.HTTPAddr == "" {
		if r.TLSCert != "" || r.AuthTokens != "" || r.OAuthIssuer != "" {
			errs = append(errs, errors.New("CODEXEC_TLS_*, CODEXEC_AUTH_TOKENS and CODEXEC_OAUTH_ISSUER need CODEXEC_HTTP_ADDR (--http)"))
		}
		return errors.Join(errs...)
	}
	if _, _, err := net.SplitHostPort(r.HTTPAddr); err != nil {
		errs = append(errs, fmt.Errorf("CODEXEC_HTTP_ADDR must be host:port, got %q", r.HTTPAddr))
	}
	if host, _, _ := net.SplitHostPort(r.HTTPAddr); r.OAuthIssuer != "" && r.ResourceURL == "" && net.ParseIP(host).IsUnspecified() {
		errs = append(errs, errors.New("CODEXEC_OAUTH_ISSUER on a wildcard address needs CODEXEC_RESOURCE_URL (the public /mcp URL tokens are issued for)"))
	}
	if (r.TLSCert == "") != (r.TLSKey == "") {
		errs = append(errs, errors.New("CODEXEC_TLS_CERT and CODEXEC_TLS_KEY go together"))
	}
	for _, u := range []struct{ name, v string }{{"CODEXEC_OAUTH_ISSUER", r.OAuthIssuer}, {"CODEXEC_OAUTH_JWKS_URL", r.OAuthJWKSURL}, {"CODEXEC_RESOURCE_URL", r.ResourceURL}} {
		if p, err := url.Parse(u.v); u.v != "" && (err != nil || p.Host == "" || (p.Scheme != "https" && p.Scheme != "http")) {
			errs = append(errs, fmt.Errorf("%s must be an absolute http(s) URL, got %q", u.name, u.v))
		}
	}
	return errors.Join(errs...)
}

// flagSet reports whether the setting env was given on the command line,
// under its own flag name or, for CODEXEC_HTTP_ADDR, the --http alias.
func flagSet(visited map[string]bool, env string) bool {
	return visited[FlagName(env)] || (env == "CODEXEC_HTTP_ADDR" && visited[httpAlias])
}
