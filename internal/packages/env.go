package packages

import "strings"

// installerVars are the exact variables the installers keep from the
// server's environment: the operator's CA bundles, proxies and config
// locations. They configure pip and npm only; sandboxed code never sees them.
var installerVars = map[string]bool{
	"PATH": true, "HOME": true, "LANG": true, "LC_ALL": true, "TMPDIR": true, "USER": true,
	"XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true, "REQUESTS_CA_BUNDLE": true, "CURL_CA_BUNDLE": true,
	"NODE_EXTRA_CA_CERTS": true, "NPM_TOKEN": true, "NODE_AUTH_TOKEN": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true, "ALL_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true, "all_proxy": true,
}

// installerPrefixes are variable families that are installer configuration.
var installerPrefixes = []string{"PIP_", "npm_config_", "NPM_CONFIG_"}

// installerExcluded would redirect or widen an install (into the user site,
// the global npm prefix) against the server's own flags, so they are dropped.
var installerExcluded = map[string]bool{
	"PIP_USER": true, "PIP_TARGET": true, "PIP_PREFIX": true, "PIP_ROOT": true, "PIP_REQUIRE_VIRTUALENV": true,
	"npm_config_global": true, "NPM_CONFIG_GLOBAL": true, "npm_config_prefix": true, "NPM_CONFIG_PREFIX": true,
}

// SelectEnv returns the entries of environ ("K=V", as from os.Environ) that
// the installers keep. main calls it; nothing below main reads the
// environment.
func SelectEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if installerExcluded[k] {
			continue
		}
		if installerVars[k] || hasAnyPrefix(k, installerPrefixes) {
			out = append(out, kv)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
