package authn

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Verifier authenticates a bearer token against the token file first, then
// the JWT issuer. Either may be nil; with both nil every token is refused.
type Verifier struct {
	Tokens *TokenFile
	JWT    *JWT
	// OnFailure, if set, is told why a request was refused: "missing",
	// "invalid" or "expired" (for metrics and the access log).
	OnFailure func(reason string)
}

// Verify is an auth.TokenVerifier. A token-file match yields a TokenInfo
// without expiry (the file's lifetime is the token's: remove the line to
// revoke); a JWT yields its subject, scopes and exp.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if v.Tokens != nil {
		if p, ok := v.Tokens.Lookup(token); ok {
			return &auth.TokenInfo{UserID: p}, nil
		}
	}
	if v.JWT != nil && strings.Count(token, ".") == 2 {
		ti, err := v.JWT.Verify(ctx, token)
		if err != nil {
			v.fail(reason(err))
		}
		return ti, err
	}
	v.fail("invalid")
	return nil, auth.ErrInvalidToken
}

func reason(err error) string {
	if errors.Is(err, ErrExpired) {
		return "expired"
	}
	return "invalid"
}

func (v *Verifier) fail(reason string) {
	if v.OnFailure != nil {
		v.OnFailure(reason)
	}
}
