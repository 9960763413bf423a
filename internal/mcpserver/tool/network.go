package tool

import (
	"context"
	"errors"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/tenant"
)

// NetworkIn is the network argument of the tools that start or run code:
// the destinations the run may reach, within the caller's ceiling.
type NetworkIn struct {
	Allow []string `json:"allow,omitempty"`
}

// ResolveNetwork is the policy of a run ctx's principal starts with in
// (nil: the call gave no network argument): every rule inside the
// principal's ceiling, or INVALID_PARAMS naming the first one that is not
// (or does not parse); NOT_ENABLED when the server allows no network.
func ResolveNetwork(ctx context.Context, svc *egress.Service, in *NetworkIn) (egress.Policy, error) {
	var req *egress.Policy
	if in != nil {
		rules := make([]egress.Rule, 0, len(in.Allow))
		for _, s := range in.Allow {
			r, err := egress.ParseRule(s)
			if err != nil {
				return egress.Policy{}, Invalidf("network.allow: %v", err)
			}
			rules = append(rules, r)
		}
		req = &egress.Policy{Allow: rules}
	}
	p, err := svc.Resolve(tenant.From(ctx), req)
	var outside *egress.OutsideError
	switch {
	case errors.As(err, &outside):
		return egress.Policy{}, Invalidf("network.allow: %v", err)
	case err != nil:
		return egress.Policy{}, Coded(CodeNotEnabled, "network.allow: %v", err)
	}
	return p, nil
}

// ReplaceNetwork is ResolveNetwork for a call that replaces a session's
// policy: nil when the call gave no network argument (the session keeps
// its own).
func ReplaceNetwork(ctx context.Context, svc *egress.Service, in *NetworkIn) (*egress.Policy, error) {
	if in == nil {
		return nil, nil
	}
	p, err := ResolveNetwork(ctx, svc, in)
	if err != nil {
		return nil, err
	}
	return &p, nil
}
