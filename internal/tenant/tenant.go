// Package tenant carries the principal (the authenticated owner of a request)
// through a context.Context. Every store that keeps per-owner state —
// sessions, contexts, scripts, execution logs, uploads and artifacts — records
// the principal that created an item with From(ctx) and refuses access from
// any other principal. No store trusts a principal named in tool input: only
// the transport layer (stdio = Local, HTTP = the verified bearer token) calls
// With.
//
// The zero context carries Local, so code paths and tests that never set a
// principal behave as the single local user of the stdio server.
package tenant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
)

// Local is the principal of the stdio transport and of any context that
// carries none: the single user on the other end of the pipe.
const Local = "local"

type key struct{}

// With returns ctx carrying principal p. An empty p means Local.
func With(ctx context.Context, p string) context.Context {
	if p == "" {
		p = Local
	}
	return context.WithValue(ctx, key{}, p)
}

// From returns the principal ctx carries, or Local when it carries none.
func From(ctx context.Context) string {
	if p, ok := ctx.Value(key{}).(string); ok && p != "" {
		return p
	}
	return Local
}

// Owns reports whether the principal of ctx may see an item owned by owner.
// An empty owner (state written before tenants existed) belongs to Local.
func Owns(ctx context.Context, owner string) bool {
	if owner == "" {
		owner = Local
	}
	return From(ctx) == owner
}

// Tag is a short, stable, file-name-safe token for principal p, for stores
// that keep per-principal state on disk or in a shared index: "" for Local
// (which keeps the layouts that predate tenants), 16 hex digits of p's
// SHA-256 otherwise. Principal names are operator-chosen and may hold any
// character, so they are never used in paths directly.
func Tag(p string) string {
	if p == "" || p == Local {
		return ""
	}
	sum := sha256.Sum256([]byte(p))
	return hex.EncodeToString(sum[:8])
}
