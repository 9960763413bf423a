package config

import (
	"net/url"
	"strings"
)

// Flag documents one command-line flag for help and generated docs.
type Flag struct {
	Name string // without dashes: max-output-chars
	// Type is how the value is read: string, int, ms (milliseconds), size
	// (512m, 1g), duration (1h, 90s), cores, list (comma-separated), or the
	// accepted values joined by "|".
	Type    string
	Env     string // the environment variable setting the same thing
	Default string // as written in the table; empty when unset or derived
	Help    string
	// Fallback is the environment variable read when Env is unset ("" for
	// none): AWS_SECRET_ACCESS_KEY for CODEXEC_S3_SECRET_KEY.
	Fallback string
}

// Flags lists every setting's flag in documentation order.
func Flags() []Flag {
	out := make([]Flag, 0, len(settings))
	for _, s := range settings {
		out = append(out, Flag{Name: FlagName(s.env), Type: s.typ, Env: s.env, Default: s.def, Help: s.help, Fallback: s.fallback})
	}
	return out
}

// HTTPAlias is the short flag accepted for --http-addr.
const HTTPAlias = httpAlias

// masked replaces a credential in MaskSecrets' output.
const masked = "***"

// secretParams are query parameter names (lower case, substrings) whose
// values MaskSecrets hides.
var secretParams = []string{"token", "key", "secret", "password", "passwd", "auth", "sig"}

// MaskSecrets hides credentials a setting value may carry so that it can be
// shown: in every comma-separated URL item (a package index such as
// https://user:token@host/simple, an issuer URL), the user information and
// the values of query parameters named like token, key, secret, password,
// auth or sig. Settings that name a secret's file (CODEXEC_AUTH_TOKENS,
// CODEXEC_TLS_KEY) show the path, which is not itself secret.
func MaskSecrets(v string) string {
	if !strings.Contains(v, "://") {
		return v
	}
	items := strings.Split(v, ",")
	for i, it := range items {
		items[i] = maskURL(it)
	}
	return strings.Join(items, ",")
}

func maskURL(s string) string {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		if strings.Contains(s, "@") {
			return masked // unparseable, and it may hold user information
		}
		return s
	}
	if u.User != nil {
		u.User = url.User(masked)
	}
	q := u.Query()
	for k := range q {
		if isSecretParam(k) {
			q.Set(k, masked)
		}
	}
	if len(q) > 0 {
		u.RawQuery = q.Encode()
	}
	out := u.String()
	// url escapes '*' in the query; keep the mask readable.
	return strings.ReplaceAll(out, "%2A%2A%2A", masked)
}

func isSecretParam(name string) bool {
	name = strings.ToLower(name)
	for _, p := range secretParams {
		if strings.Contains(name, p) {
			return true
		}
	}
	return false
}
