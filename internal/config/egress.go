package config

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/egress"
)

// Egress holds the settings of a run's network (package egress): the
// operator's ceiling of destinations, per-principal ceilings within it,
// whether a run without a network argument gets the ceiling, pinned
// addresses, the credentials file and extra CAs for upstream TLS. The zero
// value (no ceiling) gives no run any network.
type Egress struct {
	// Allow is CODEXEC_EGRESS_ALLOW, parsed: the server's ceiling.
	Allow []egress.Rule
	// Principals is CODEXEC_PRINCIPAL_EGRESS_ALLOW: a narrower ceiling
	// per principal, each rule inside Allow (checked at start).
	Principals map[string][]egress.Rule
	// Default is EgressDefaultNone or EgressDefaultCeiling.
	Default string
	// Pins is CODEXEC_EGRESS_RESOLVE: the address the proxy dials for a
	// name.
	Pins map[string]netip.Addr
	// Credentials is the path of the credentials file (YAML or JSON);
	// loaded and checked at start by the app.
	Credentials string
	// CAFile is a PEM file of extra CAs for upstream TLS; checked at start.
	CAFile string
}

// Values of CODEXEC_EGRESS_DEFAULT.
const (
	EgressDefaultNone    = "none"
	EgressDefaultCeiling = "ceiling"
)

func init() {
	settings = append(settings, egressSettings...)
}

var egressSettings = []setting{
	{"CODEXEC_EGRESS_ALLOW", "", "destinations sandboxed code may reach through codexec's proxy, at most (the ceiling): comma-separated host, *.suffix (subdomains only) or either with :port (no port = 80 and 443); empty = no network. A call narrows it with network.allow (docs/egress.md)", egressRules(func(c *Config) *[]egress.Rule { return &c.Egress.Allow })},
	{"CODEXEC_PRINCIPAL_EGRESS_ALLOW", "", "per principal, a narrower ceiling: PRINCIPAL=RULE[,RULE…] entries separated by ';', every rule inside CODEXEC_EGRESS_ALLOW (principals not listed get CODEXEC_EGRESS_ALLOW)", principalEgress},
	{"CODEXEC_EGRESS_DEFAULT", EgressDefaultNone, "network of a run whose call has no network argument: none | ceiling (the caller's whole ceiling)", oneOf(func(c *Config) *string { return &c.Egress.Default }, EgressDefaultNone, EgressDefaultCeiling)},
	{"CODEXEC_EGRESS_RESOLVE", "", "pinned addresses: host=ip[,host=ip…]; the proxy dials that address for that name, even a loopback or private one", egressPins},
	{"CODEXEC_EGRESS_CREDENTIALS", "", "YAML or JSON file of credentials the proxy adds to requests to a host (the sandbox sees only a placeholder): credentials: [{host, header, value_env | value_file, placeholder, principals}]", str(func(c *Config) *string { return &c.Egress.Credentials })},
	{"CODEXEC_EGRESS_CA_FILE", "", "PEM file of extra CAs the proxy trusts for upstream TLS (a private or test CA); also trusted inside the sandbox", str(func(c *Config) *string { return &c.Egress.CAFile })},
}

func egressRules(field func(*Config) *[]egress.Rule) kind {
	return kind{typ: "list",
		set: func(c *Config, v string) (err error) { *field(c), err = egress.ParseRules(v); return err },
		get: func(c *Config) string { return joinRules(*field(c)) }}
}

func joinRules(rules []egress.Rule) string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return strings.Join(out, ",")
}

// principalEgress parses "PRINCIPAL=RULE[,RULE…];…".
var principalEgress = kind{typ: "list",
	set: func(c *Config, v string) error {
		m := map[string][]egress.Rule{}
		for _, e := range strings.Split(v, ";") {
			if e = strings.TrimSpace(e); e == "" {
				continue
			}
			p, rules, ok := strings.Cut(e, "=")
			p = strings.TrimSpace(p)
			if !ok || p == "" || strings.TrimSpace(rules) == "" {
				return fmt.Errorf("entry %q: want PRINCIPAL=RULE[,RULE…]", e)
			}
			parsed, err := egress.ParseRules(rules)
			if err != nil {
				return fmt.Errorf("principal %s: %w", p, err)
			}
			m[p] = append(m[p], parsed...)
		}
		c.Egress.Principals = m
		return nil
	},
	get: func(c *Config) string {
		var out []string
		for _, p := range slices.Sorted(maps.Keys(c.Egress.Principals)) {
			out = append(out, p+"="+joinRules(c.Egress.Principals[p]))
		}
		return strings.Join(out, ";")
	}}

// egressPins parses "host=ip[,host=ip…]".
var egressPins = kind{typ: "list",
	set: func(c *Config, v string) error {
		m := map[string]netip.Addr{}
		for _, e := range SplitList(v) {
			h, ip, ok := strings.Cut(e, "=")
			h = strings.ToLower(strings.TrimSpace(h))
			if !ok || h == "" || strings.ContainsAny(h, "*:/ ") {
				return fmt.Errorf("pin %q: want host=ip, e.g. api.internal=10.0.0.5", e)
			}
			addr, err := netip.ParseAddr(strings.TrimSpace(ip))
			if err != nil {
				return fmt.Errorf("pin %q: %q is not an IP address", e, strings.TrimSpace(ip))
			}
			m[h] = addr.Unmap()
		}
		c.Egress.Pins = m
		return nil
	},
	get: func(c *Config) string {
		var out []string
		for _, h := range slices.Sorted(maps.Keys(c.Egress.Pins)) {
			out = append(out, h+"="+c.Egress.Pins[h].String())
		}
		return strings.Join(out, ",")
	}}

// validateEgress checks that every principal's ceiling lies inside the
// server's: a principal can be narrowed, never widened.
func (c Config) validateEgress() error {
	ceiling := egress.Policy{Allow: c.Egress.Allow}
	for _, p := range slices.Sorted(maps.Keys(c.Egress.Principals)) {
		if err := (egress.Policy{Allow: c.Egress.Principals[p]}).Within(ceiling); err != nil {
			return fmt.Errorf("CODEXEC_PRINCIPAL_EGRESS_ALLOW: principal %s: %w (a principal's rules must lie inside CODEXEC_EGRESS_ALLOW)", p, err)
		}
	}
	return nil
}
