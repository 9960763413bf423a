// Package netarg is the network argument of the tools that start or run
// code (network: {"allow": [...]}), resolved against the caller's ceiling
// by the egress owner.
package netarg

import (
	"context"
	"errors"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/tenant"
)

// In is the network argument of the tools that start or run code:
// the destinations the run may reach, within the caller's ceiling.
type In struct {
	Allow []string `json:"allow,omitempty"`
}

// Resolve is the policy of a run ctx's principal starts with in
// (nil: the call gave no network argument): every rule inside the
// principal's ceiling, or INVALID_PARAMS naming the first one that is not
// (or does not parse); NOT_ENABLED when the server allows no network.
func Resolve(ctx context.Context, svc *egress.Service, in *In) (egress.Policy, error) {
	var req *egress.Policy
	if in != nil {
		rules := make([]egress.Rule, 0, len(in.Allow))
		for _, s := range in.Allow {
			r, err := egress.ParseRule(s)
			if err != nil {
				return egress.Policy{}, tool.Invalidf("network.allow: %v", err)
			}
			rules = append(rules, r)
		}
		req = &egress.Policy{Allow: rules}
	}
	p, err := svc.Resolve(tenant.From(ctx), req)
	var outside *egress.OutsideError
	switch {
	case errors.As(err, &outside):
		return egress.Policy{}, tool.Invalidf("network.allow: %v", err)
	case err != nil:
		return egress.Policy{}, tool.Coded(tool.CodeNotEnabled, "network.allow: %v", err)
	}
	return p, nil
}

// Replace is Resolve for a call that replaces a session's
// policy: nil when the call gave no network argument (the session keeps
// its own).
func Replace(ctx context.Context, svc *egress.Service, in *In) (*egress.Policy, error) {
	if in == nil {
		return nil, nil
	}
	p, err := Resolve(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
