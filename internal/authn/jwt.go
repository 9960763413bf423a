package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// JWTOptions configure OAuth 2.1 resource-server mode.
type JWTOptions struct {
	// Issuer is the authorization server's issuer identifier; the iss claim
	// must equal it.
	Issuer string
	// JWKSURL is the issuer's key set. Empty: read jwks_uri from the
	// issuer's RFC 8414 metadata at start-up.
	JWKSURL string
	// Resource is this server's resource identifier; the aud claim must
	// name it (RFC 8707 / MCP authorization: tokens are audience-bound).
	Resource string
	// Leeway tolerates clock skew on exp/nbf/iat.
	Leeway time.Duration
	// Client fetches metadata and keys (default http.DefaultClient).
	Client *http.Client
}

// JWT verifies access tokens signed with the issuer's published keys. The
// key set is fetched in the background and refreshed hourly and when a token
// names an unknown key id (rate limited), by keyfunc.
type JWT struct {
	opts   JWTOptions
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
}

// validMethods are the asymmetric algorithms accepted: a JWKS publishes
// public keys, so HMAC ("none" too) is never valid here.
var validMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// NewJWT prepares verification; ctx bounds the key refresh goroutine's life.
func NewJWT(ctx context.Context, o JWTOptions) (*JWT, error) {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.JWKSURL == "" {
		meta, err := oauthex.GetAuthServerMeta(ctx, strings.TrimRight(o.Issuer, "/")+"/.well-known/oauth-authorization-server", o.Issuer, o.Client)
		if err != nil || meta == nil || meta.JWKSURI == "" {
			return nil, fmt.Errorf("discover the issuer's jwks_uri (set CODEXEC_OAUTH_JWKS_URL): %v", err)
		}
		o.JWKSURL = meta.JWKSURI
	}
	keys, err := keyfunc.NewDefaultCtx(ctx, []string{o.JWKSURL})
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", o.JWKSURL, err)
	}
	parser := jwt.NewParser(jwt.WithValidMethods(validMethods), jwt.WithIssuer(o.Issuer),
		jwt.WithExpirationRequired(), jwt.WithIssuedAt(), jwt.WithLeeway(o.Leeway))
	return &JWT{opts: o, keys: keys, parser: parser}, nil
}

// accessClaims are the claims codexec reads (RFC 9068 names).
type accessClaims struct {
	jwt.RegisteredClaims
	Scope string   `json:"scope,omitempty"`
	Scp   []string `json:"scp,omitempty"`
}

// Verify checks signature, issuer, audience and lifetime and returns the
// token's subject as principal. Failures wrap auth.ErrInvalidToken; an
// expired token also wraps ErrExpired.
func (j *JWT) Verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	var c accessClaims
	if _, err := j.parser.ParseWithClaims(token, &c, j.keys.KeyfuncCtx(ctx)); err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) {
			return nil, fmt.Errorf("%w: %w", auth.ErrInvalidToken, ErrExpired)
		}
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	if !oauthex.MatchesResource(c.Audience, j.opts.Resource) {
		return nil, fmt.Errorf("%w: audience %v does not name %s", auth.ErrInvalidToken, []string(c.Audience), j.opts.Resource)
	}
	if c.Subject == "" {
		return nil, fmt.Errorf("%w: no sub claim", auth.ErrInvalidToken)
	}
	scopes := c.Scp
	if c.Scope != "" {
		scopes = strings.Fields(c.Scope)
	}
	return &auth.TokenInfo{UserID: c.Subject, Scopes: scopes, Expiration: c.ExpiresAt.Time}, nil
}

// ErrExpired marks a token refused only because its lifetime ended.
var ErrExpired = errors.New("token expired")
