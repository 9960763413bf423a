package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/codexec/codexec/internal/tenant"
)

// CookieName is the login cookie: the principal and an expiry, signed.
const CookieName = "codexec_console"

// minKey is the shortest cookie key accepted.
const minKey = 32

// keys signs login cookies and derives their CSRF tokens.
type keys struct{ key []byte }

func newKeys(key []byte) (*keys, error) {
	if len(key) == 0 {
		key = make([]byte, minKey)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	if len(key) < minKey {
		return nil, errors.New("console cookie key: want at least 32 bytes")
	}
	return &keys{key: key}, nil
}

func (k *keys) mac(parts ...string) string {
	h := hmac.New(sha256.New, k.key)
	h.Write([]byte(strings.Join(parts, "\x00")))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// cookie is the value of a login of principal p until exp.
func (k *keys) cookie(p string, exp time.Time) string {
	body := base64.RawURLEncoding.EncodeToString([]byte(p)) + "." + strconv.FormatInt(exp.Unix(), 10)
	return body + "." + k.mac("login", body)
}

// principal checks a cookie value and returns its principal, or false
// for a forged, altered or expired one.
func (k *keys) principal(v string, now time.Time) (string, bool) {
	i := strings.LastIndexByte(v, '.')
	if i < 0 || !hmac.Equal([]byte(v[i+1:]), []byte(k.mac("login", v[:i]))) {
		return "", false
	}
	enc, expStr, ok := strings.Cut(v[:i], ".")
	exp, err := strconv.ParseInt(expStr, 10, 64)
	p, err2 := base64.RawURLEncoding.DecodeString(enc)
	if !ok || err != nil || err2 != nil || now.Unix() >= exp {
		return "", false
	}
	return string(p), true
}

// csrf is the CSRF token of a login cookie value: a form posted with it
// comes from a page this console served to that login.
func (k *keys) csrf(cookie string) string { return k.mac("csrf", cookie) }

// oneTime is the token codexec console prints, good for one login.
type oneTime struct {
	mu    sync.Mutex
	token string
}

func newOneTime(token string) *oneTime {
	if token == "" {
		return nil
	}
	return &oneTime{token: token}
}

// take reports whether t is the token and spends it.
func (o *oneTime) take(t string) bool {
	if o == nil || t == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.token == "" || subtle.ConstantTimeCompare([]byte(t), []byte(o.token)) != 1 {
		return false
	}
	o.token = ""
	return true
}

// Viewer is who looks at a page: the principal, whether it sees everyone's
// data, and the CSRF token its forms carry.
type Viewer struct {
	Principal string
	Operator  bool
	CSRF      string
	// Login: the console has logins (show the log-out button).
	Login    bool
	ReadOnly bool
}

type viewerKey struct{}

// viewer is the Viewer authed put in r's context.
func viewer(r *http.Request) Viewer {
	v, _ := r.Context().Value(viewerKey{}).(Viewer)
	return v
}

// needsLogin reports whether pages need a login cookie: a verifier or a
// one-time token is configured.
func (c *Console) needsLogin() bool { return c.opts.Verifier != nil || c.opts.OneTimeToken != "" }

// authed runs next for a logged-in principal, with the principal in the
// context (tenant.With) and the Viewer for the templates. Without login,
// GETs go to the login page and other methods are refused. A console
// without logins gives the local principal a cookie all the same, so its
// forms have a CSRF token to carry.
func (c *Console) authed(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var p, val string
		var ok bool
		if ck, err := r.Cookie(CookieName); err == nil {
			val = ck.Value
			p, ok = c.keys.principal(val, now)
		}
		if !ok && !c.needsLogin() {
			p, val, ok = tenant.Local, c.setCookie(w, tenant.Local, now.Add(c.opts.CookieTTL)), true
		}
		if !ok {
			c.toLogin(w, r)
			return
		}
		v := Viewer{Principal: p, Operator: c.operator(p), CSRF: c.keys.csrf(val), Login: c.needsLogin(), ReadOnly: c.opts.ReadOnly}
		ctx := context.WithValue(tenant.With(r.Context(), p), viewerKey{}, v)
		next(w, r.WithContext(ctx))
	}
}

// toLogin sends a browser without a valid login to the login page.
func (c *Console) toLogin(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "log in first", http.StatusUnauthorized)
		return
	}
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// posted runs next only for a form carrying the CSRF token of the login
// cookie it came with; anything else is refused and changes nothing.
func (c *Console) posted(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		want := viewer(r).CSRF
		if got := r.PostFormValue("csrf"); want == "" || !hmac.Equal([]byte(got), []byte(want)) {
			c.fail(w, r, http.StatusForbidden, "This form expired or did not come from the console: reload the page and try again.", nil)
			return
		}
		next(w, r)
	}
}

// setCookie logs p in until exp and returns the cookie's value.
func (c *Console) setCookie(w http.ResponseWriter, p string, exp time.Time) string {
	v := c.keys.cookie(p, exp)
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: v, Path: Prefix, Expires: exp, HttpOnly: true,
		Secure: c.opts.Secure, SameSite: http.SameSiteStrictMode})
	return v
}

// loginPage shows the token form, or spends a one-time token given in
// the URL (codexec console's link).
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if !c.needsLogin() {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	if t := r.URL.Query().Get("token"); t != "" {
		if !c.once.take(t) {
			c.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Data: loginData{Error: "That link was used already or is not valid: start codexec console again for a new one."}})
			return
		}
		c.setCookie(w, tenant.Local, time.Now().Add(c.opts.CookieTTL))
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	c.render(w, http.StatusOK, "login", page{Title: "Log in", Data: loginData{Form: c.opts.Verifier != nil}})
}

// loginData is the login page's content.
type loginData struct {
	Error string
	// Form: tokens can be typed in (a verifier is configured).
	Form bool
}

// login checks a posted token with the verifier /mcp uses and sets the
// login cookie, no longer-lived than the token.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("token"))
	if c.opts.Verifier == nil || token == "" {
		c.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Data: loginData{Form: c.opts.Verifier != nil, Error: "Enter a token."}})
		return
	}
	ti, err := c.opts.Verifier(r.Context(), token, r)
	now := time.Now()
	if err != nil || ti == nil || ti.UserID == "" || (!ti.Expiration.IsZero() && !now.Before(ti.Expiration)) || !hasScopes(ti.Scopes, c.opts.Scopes) {
		c.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Data: loginData{Form: true, Error: "That token was not accepted."}})
		return
	}
	exp := now.Add(c.opts.CookieTTL)
	if !ti.Expiration.IsZero() && ti.Expiration.Before(exp) {
		exp = ti.Expiration
	}
	c.setCookie(w, ti.UserID, exp)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// hasScopes reports whether have holds every scope of want.
func hasScopes(have, want []string) bool {
	for _, s := range want {
		if !slices.Contains(have, s) {
			return false
		}
	}
	return true
}

// logout ends the login (a POST with the CSRF token).
func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	c.authed(c.posted(func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
			Secure: c.opts.Secure, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
	}))(w, r)
}
