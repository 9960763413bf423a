package config

import (
	"fmt"
	"net/url"
	"strings"
)

// StoreEmbedded is CODEXEC_STORE's name for the default store: scripts in
// CODEXEC_SCRIPTS_DIR, history in CODEXEC_LOG_DIR (JSONL + SQLite index),
// sessions known to this process only.
const StoreEmbedded = "embedded"

// StoreDSN is the PostgreSQL URL of the shared store, or "" for the
// embedded one.
func (c Config) StoreDSN() string {
	if c.Store == "" || c.Store == StoreEmbedded {
		return ""
	}
	return c.Store
}

// validateStore accepts "", "embedded" or a postgres:// (postgresql://)
// URL naming a host or a socket directory (?host=). The message masks the
// URL's credentials.
func validateStore(v string) error {
	if v == "" || v == StoreEmbedded {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		got := "a value that is not a URL" // may be a key=value DSN with a password: not shown
		if strings.Contains(v, "://") {
			got = fmt.Sprintf("%q", MaskSecrets(v))
		}
		return fmt.Errorf("CODEXEC_STORE must be %q (the default) or a PostgreSQL URL postgres://user:password@host:5432/db, got %s",
			StoreEmbedded, got)
	}
	if u.Host == "" && u.Query().Get("host") == "" {
		return fmt.Errorf("CODEXEC_STORE names no PostgreSQL host: %q (postgres://user:password@host:5432/db, or ?host=/socket/dir)", MaskSecrets(v))
	}
	if strings.TrimPrefix(u.Path, "/") == "" {
		return fmt.Errorf("CODEXEC_STORE names no database: %q (postgres://host/DATABASE)", MaskSecrets(v))
	}
	return nil
}
