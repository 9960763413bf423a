package console

import (
	"net/http"
	"time"
)

// LoginCookie is a login cookie of principal p for c, as a login sets it
// (benchmarks render pages without logging in each time).
func LoginCookie(c *Console, p string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: c.keys.cookie(p, time.Now().Add(time.Hour))}
}
