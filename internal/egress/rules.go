package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Rule allows connections to one host (or every subdomain of a suffix, or
// one IP address) on one port, or on 80 and 443 when Port is 0.
type Rule struct {
	// Host is a lowercase host name, "*.suffix" (subdomains of suffix,
	// not suffix itself) or an IP address in canonical form (no brackets).
	Host string
	// Port is 1-65535, or 0 for the web ports 80 and 443.
	Port int
}

// webPorts are the ports a rule without a port allows.
var webPorts = []int{80, 443}

// ParseRule parses "host", "*.suffix", "1.2.3.4", "[::1]", each
// optionally followed by ":port". The error names the rule and says what
// is wrong with it.
func ParseRule(s string) (Rule, error) {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return Rule{}, fmt.Errorf("network rule %q is empty: write a host name such as api.example.com, *.example.com or host:port", s)
	}
	if strings.Contains(raw, "/") || strings.Contains(raw, "://") {
		return Rule{}, fmt.Errorf("network rule %q has a scheme or path: write only the host and optionally :port (e.g. api.example.com:443)", s)
	}
	host, port, err := splitRule(raw)
	if err != nil {
		return Rule{}, fmt.Errorf("network rule %q: %w", s, err)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return Rule{}, fmt.Errorf("network rule %q: an IP address with a zone is not allowed", s)
		}
		return Rule{Host: addr.Unmap().String(), Port: port}, nil
	}
	if err := checkHostPattern(host); err != nil {
		return Rule{}, fmt.Errorf("network rule %q: %w", s, err)
	}
	return Rule{Host: host, Port: port}, nil
}

// splitRule separates the host from an optional port. A bare IPv6
// address is taken whole (it has more than one colon); with a port it
// must be in brackets.
func splitRule(raw string) (string, int, error) {
	if strings.HasPrefix(raw, "[") {
		end := strings.Index(raw, "]")
		if end < 0 {
			return "", 0, fmt.Errorf("missing ] after the IPv6 address")
		}
		host, rest := raw[1:end], raw[end+1:]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("%q in brackets is not an IPv6 address", host)
		}
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("unexpected %q after the IPv6 address", rest)
		}
		port, err := parsePort(rest[1:])
		return host, port, err
	}
	if strings.Count(raw, ":") > 1 {
		return raw, 0, nil // bare IPv6, checked by the caller
	}
	host, portText, found := strings.Cut(raw, ":")
	if !found {
		return strings.ToLower(host), 0, nil
	}
	port, err := parsePort(portText)
	return strings.ToLower(host), port, err
}

func parsePort(s string) (int, error) {
	port, err := strconv.Atoi(s)
	if err != nil || port < 1 || port > 65535 {
		return 0, fmt.Errorf("the port must be a number from 1 to 65535 (not %q)", s)
	}
	return port, nil
}

// checkHostPattern accepts a DNS name (letters, digits, hyphens, dots) or
// "*." followed by one, with at least one dot in the suffix so that a
// wildcard never covers a whole top-level domain.
func checkHostPattern(host string) error {
	name := host
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		if !strings.Contains(rest, ".") {
			return fmt.Errorf("the wildcard suffix %q is too broad: name at least a second-level domain such as *.example.com", rest)
		}
		name = rest
	}
	if strings.Contains(name, "*") {
		return fmt.Errorf("a wildcard is only allowed as the first label (*.example.com)")
	}
	return checkHostName(name)
}

// checkHostName validates a lowercase DNS name (no trailing dot).
func checkHostName(name string) error {
	if len(name) > 253 {
		return fmt.Errorf("host name is longer than 253 characters")
	}
	for _, label := range strings.Split(name, ".") {
		if err := checkLabel(label); err != nil {
			return err
		}
	}
	return nil
}

func checkLabel(label string) error {
	if label == "" || len(label) > 63 {
		return fmt.Errorf("host name has an empty label or one longer than 63 characters")
	}
	if label[0] == '-' || label[len(label)-1] == '-' {
		return fmt.Errorf("host name label %q starts or ends with a hyphen", label)
	}
	for _, c := range label {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("host name contains %q: only letters, digits, hyphens and dots are allowed", c)
		}
	}
	return nil
}

// ParseRules parses a comma-separated list of rules; "" (or only spaces)
// gives nil. The first bad rule's error is returned.
func ParseRules(s string) ([]Rule, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var rules []Rule
	for _, part := range strings.Split(s, ",") {
		r, err := ParseRule(part)
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// String formats r so that ParseRule gives r back.
func (r Rule) String() string {
	host := r.Host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if r.Port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(r.Port)
}

// wildcard returns the suffix of a "*.suffix" rule.
func (r Rule) wildcard() (string, bool) {
	return strings.CutPrefix(r.Host, "*.")
}

// isIP reports whether the rule names an IP address.
func (r Rule) isIP() bool {
	_, err := netip.ParseAddr(r.Host)
	return err == nil
}

// matchesHost reports whether host (normalized) is one r names.
func (r Rule) matchesHost(host string) bool {
	if suffix, ok := r.wildcard(); ok {
		// A wildcard names host names only: "*.0.1" must not match the
		// address 10.0.0.1.
		_, err := netip.ParseAddr(host)
		return err != nil && strings.HasSuffix(host, "."+suffix)
	}
	return r.Host == host
}

// matches reports whether r allows host:port (host in any case, with or
// without a trailing dot).
func (r Rule) matches(host string, port int) bool {
	return r.matchesHost(normalizeHost(host)) && r.matchesPort(port)
}

// matchesPort reports whether r allows port.
func (r Rule) matchesPort(port int) bool {
	if r.Port == 0 {
		return port == 80 || port == 443
	}
	return r.Port == port
}

// ports lists the ports r allows.
func (r Rule) ports() []int {
	if r.Port == 0 {
		return webPorts
	}
	return []int{r.Port}
}

// coversHost reports whether every host inner names is one r names.
func (r Rule) coversHost(inner Rule) bool {
	if r.Host == inner.Host {
		return true
	}
	suffix, ok := r.wildcard()
	if !ok {
		return false
	}
	if is, iw := inner.wildcard(); iw {
		return strings.HasSuffix(is, "."+suffix)
	}
	return !inner.isIP() && strings.HasSuffix(inner.Host, "."+suffix)
}

// normalizeHost lowercases a destination host, drops a trailing dot and
// brackets, and canonicalizes IP addresses so it compares with rules.
func normalizeHost(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if addr, err := netip.ParseAddr(host); err == nil {
		return addr.Unmap().String()
	}
	return host
}

// Policy is the set of destinations a run may connect to. The zero value
// allows none.
type Policy struct {
	Allow []Rule
}

// None reports whether p allows no destination at all.
func (p Policy) None() bool { return len(p.Allow) == 0 }

// Allows reports whether p allows connecting to host:port. host may be a
// name (any case, trailing dot ignored) or an IP address.
func (p Policy) Allows(host string, port int) bool {
	for _, r := range p.Allow {
		if r.matches(host, port) {
			return true
		}
	}
	return false
}

// String lists the rules comma-separated ("" for none), as ParseRules
// reads them.
func (p Policy) String() string {
	parts := make([]string, len(p.Allow))
	for i, r := range p.Allow {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// Within returns nil when everything p allows, ceiling allows too, and
// otherwise an *OutsideError naming the first rule of p that is not.
func (p Policy) Within(ceiling Policy) error {
	for _, r := range p.Allow {
		if !ceiling.covers(r) {
			return &OutsideError{Rule: r}
		}
	}
	return nil
}

// covers reports whether each of r's ports on r's hosts is covered by one
// rule of p (80 and 443 may come from two rules).
func (p Policy) covers(r Rule) bool {
	for _, port := range r.ports() {
		if !p.coversPort(r, port) {
			return false
		}
	}
	return true
}

func (p Policy) coversPort(r Rule, port int) bool {
	for _, c := range p.Allow {
		if c.coversHost(r) && c.matchesPort(port) {
			return true
		}
	}
	return false
}

// OutsideError says a requested rule allows more than the caller's
// ceiling does.
type OutsideError struct {
	Rule Rule
}

func (e *OutsideError) Error() string {
	return fmt.Sprintf("network rule %q is outside what this server allows you (CODEXEC_EGRESS_ALLOW, or your principal's ceiling): ask the operator to allow it, or remove it from network.allow", e.Rule.String())
}
