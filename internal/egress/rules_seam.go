package egress

// Temporary stand-in for the rule type the policy side of this package
// defines; it is deleted when both halves meet. It carries only what the
// credential file and its tests need.

import (
	"fmt"
	"strconv"
	"strings"
)

// Rule names the hosts and port a policy allows.
type Rule struct {
	Host string
	Port int
}

// ParseRule parses "host", "*.suffix", either with ":port".
func ParseRule(s string) (Rule, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	host, port := s, 0
	if i := strings.LastIndexByte(s, ':'); i >= 0 && !strings.HasSuffix(s, "]") {
		p, err := strconv.Atoi(s[i+1:])
		if err != nil || p < 1 || p > 65535 {
			return Rule{}, fmt.Errorf("rule %q: the port must be a number from 1 to 65535", s)
		}
		host, port = s[:i], p
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" || host == "*." || strings.ContainsAny(host, " /") {
		return Rule{}, fmt.Errorf("rule %q: expected a host name, *.suffix or an IP address", s)
	}
	return Rule{Host: host, Port: port}, nil
}

// matches reports whether host:port falls under r.
func (r Rule) matches(host string, port int) bool {
	if r.Port == 0 && port != 80 && port != 443 || r.Port != 0 && r.Port != port {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if suffix, ok := strings.CutPrefix(r.Host, "*."); ok {
		return strings.HasSuffix(host, "."+suffix) && len(host) > len(suffix)+1
	}
	return host == r.Host
}

// String gives the rule back in the form ParseRule reads.
func (r Rule) String() string {
	if r.Port == 0 {
		return r.Host
	}
	return r.Host + ":" + strconv.Itoa(r.Port)
}
