// Package transfer moves file bytes over plain HTTP instead of inside MCP
// messages, where base64 and JSON would cost most of the time: it issues
// tickets, each an unguessable URL (256 random bits) on the server's own
// listener that is bound to the principal it was issued to, single use and
// expiring, and serves them: a PUT streams the request body into an upload,
// a GET streams a file out (Content-Length, Content-Type, Range).
//
// A ticket names the work to do, decided and checked by the server when it
// was issued (a session's file, a kept item's file, a new staged upload);
// nothing in the URL but the token comes from the client, so a URL can reach
// no other file. The work itself goes through the same confined readers and
// writers as the MCP tools (files.Root, files.Store).
//
// Tickets live in this process's memory: a URL is served by the replica
// that issued it, which is why URLs are built on that replica's own address
// (SetBase).
package transfer

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/errcode"
)

// PathPrefix is the route tickets are served under: PathPrefix + token.
const PathPrefix = "/files/"

// MaxLive bounds the tickets held at once (issued, neither used nor
// expired); issuing more fails with ErrTooMany.
const MaxLive = 10000

// ErrTooMany is returned by Issue when MaxLive tickets are live.
var ErrTooMany = errcode.New(errcode.LimitExceeded, "too many transfer URLs are open; use or let some expire first")

// ErrNoBase is returned by Issue when there is no listener to serve URLs
// on: before SetBase, and over stdio with transfer URLs turned off.
var ErrNoBase = errcode.New(errcode.NotEnabled, "transfer URLs are turned off on this server (CODEXEC_TRANSFER_LISTEN=off): send the bytes in the call")

// Upload writes the body of a PUT (size bytes, -1 when unknown) and returns
// the result to answer with, encoded as JSON. ctx carries the ticket's
// principal (tenant.With).
type Upload func(ctx context.Context, body io.Reader, size int64) (any, error)

// Download opens the file a GET serves. ctx carries the ticket's
// principal. The caller closes the Content.
type Download func(ctx context.Context) (*Content, error)

// Content is a file to serve: its bytes, size, name and type.
type Content struct {
	io.ReaderAt
	Size     int64
	Name     string
	MIMEType string
	ModTime  time.Time
	Close    func() error
}

// ticket is one issued URL's work.
type ticket struct {
	principal string
	expires   time.Time
	upload    Upload
	download  Download
}

// Tickets issues and serves transfer URLs. Safe for concurrent use.
type Tickets struct {
	ttl  time.Duration
	now  func() time.Time
	mu   sync.Mutex
	base string
	open func() (string, error) // opens a listener on first use when base is unset (SetOpener)
	live map[string]*ticket
}

// New returns Tickets whose URLs expire ttl after they are issued.
func New(ttl time.Duration) *Tickets {
	return &Tickets{ttl: ttl, now: time.Now, live: map[string]*ticket{}}
}

// SetBase sets the URL prefix (scheme://host[:port][/path]) clients reach
// this replica's listener at; until it is set Issue fails with ErrNoBase.
func (t *Tickets) SetBase(base string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.base = strings.TrimRight(base, "/")
}

// SetOpener makes the first Issue without a base call open, which starts a
// listener and returns its base (as SetBase takes it). A failed open is
// retried by the next Issue. A stdio server uses it so that it listens on
// a port only once a client asks for a URL.
func (t *Tickets) SetOpener(open func() (string, error)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.open = open
}

// IssueUpload returns a URL a PUT of principal p runs fn on, once.
func (t *Tickets) IssueUpload(p string, fn Upload) (string, time.Time, error) {
	return t.issue(&ticket{principal: p, upload: fn})
}

// IssueDownload returns a URL a GET of principal p serves fn's file at, once.
func (t *Tickets) IssueDownload(p string, fn Download) (string, time.Time, error) {
	return t.issue(&ticket{principal: p, download: fn})
}

func (t *Tickets) issue(tk *ticket) (string, time.Time, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.opened(); err != nil {
		return "", time.Time{}, err
	}
	now := t.now()
	t.sweep(now)
	if len(t.live) >= MaxLive {
		return "", time.Time{}, ErrTooMany
	}
	tok := newToken()
	tk.expires = now.Add(t.ttl)
	t.live[tok] = tk
	return t.base + PathPrefix + tok, tk.expires, nil
}

// opened makes sure there is a base, calling the opener if there is none
// yet (t.mu held: concurrent first issues open one listener).
func (t *Tickets) opened() error {
	switch {
	case t.base != "":
		return nil
	case t.open == nil:
		return ErrNoBase
	}
	base, err := t.open()
	if err != nil {
		return fmt.Errorf("opening the transfer listener: %w", err)
	}
	t.base = strings.TrimRight(base, "/")
	return nil
}

// sweep forgets expired tickets (t.mu held).
func (t *Tickets) sweep(now time.Time) {
	for tok, tk := range t.live {
		if !now.Before(tk.expires) {
			delete(t.live, tok)
		}
	}
}

// newToken is 32 random bytes, URL-safe base64: unguessable.
func newToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// take returns the live ticket tok of principal p and, when use is set,
// forgets it (single use; a HEAD only looks). A ticket of another
// principal is left in place (a stranger cannot burn it) and reported as
// errForeign.
func (t *Tickets) take(tok, p string, use bool) (*ticket, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tk, ok := t.live[tok]
	switch {
	case !ok:
		return nil, errGone
	case !t.now().Before(tk.expires):
		delete(t.live, tok)
		return nil, errGone
	case tk.principal != p:
		return nil, errForeign
	}
	if use {
		delete(t.live, tok)
	}
	return tk, nil
}

var (
	errGone    = errors.New("this transfer URL is unknown, already used or expired: call upload_file or download_file with transfer \"url\" for a new one")
	errForeign = errors.New("this transfer URL was issued to another principal: send the same credentials as the call that returned it")
)
