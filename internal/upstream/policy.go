package upstream

import (
	"fmt"
	"path"
	"strings"
)

// Policy decides which upstream tools sandboxed code may call, by globs over
// "server.tool" (path.Match syntax). A tool is allowed when no allow glob is
// given or one matches, and no deny glob matches: deny wins. The zero Policy
// allows everything.
type Policy struct {
	allow, deny []string
}

// ParsePolicy parses CODEXEC_TOOL_POLICY: globs separated by commas or
// spaces; a leading "!" (or "-") makes a deny glob. Example:
// "memory.*,everything.*,!*.delete_*".
func ParsePolicy(spec string) (Policy, error) {
	var p Policy
	for _, f := range strings.FieldsFunc(spec, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' }) {
		deny := strings.HasPrefix(f, "!") || strings.HasPrefix(f, "-")
		if deny {
			f = f[1:]
		}
		if _, err := path.Match(f, ""); err != nil || f == "" {
			return Policy{}, fmt.Errorf("bad glob %q", f)
		}
		if deny {
			p.deny = append(p.deny, f)
		} else {
			p.allow = append(p.allow, f)
		}
	}
	return p, nil
}

// Check returns nil when server.tool is allowed, else an error naming the
// policy and the rule.
func (p Policy) Check(server, tool string) error {
	full := server + "." + tool
	for _, g := range p.deny {
		if ok, _ := path.Match(g, full); ok {
			return fmt.Errorf("tool %s is denied by CODEXEC_TOOL_POLICY (rule !%s)", full, g)
		}
	}
	if len(p.allow) == 0 {
		return nil
	}
	for _, g := range p.allow {
		if ok, _ := path.Match(g, full); ok {
			return nil
		}
	}
	return fmt.Errorf("tool %s is not allowed by CODEXEC_TOOL_POLICY (allowed: %s)", full, strings.Join(p.allow, ", "))
}
