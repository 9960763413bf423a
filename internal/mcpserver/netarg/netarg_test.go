package netarg

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/tenant"
)

func newEgress(t *testing.T, cfg egress.Config) *egress.Service {
	t.Helper()
	cfg.StateDir = t.TempDir()
	svc, err := egress.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func mustRules(t *testing.T, s string) []egress.Rule {
	t.Helper()
	r, err := egress.ParseRules(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestResolveNetwork checks the network argument against the caller's
// ceiling: what a run gets, and the error code and words of a refusal.
func TestResolve(t *testing.T) {
	svc := newEgress(t, egress.Config{Ceiling: egress.Policy{Allow: mustRules(t, "api.test.example,*.corp.example")},
		Principals: map[string]egress.Policy{"alice": {Allow: mustRules(t, "api.test.example")}}})
	cases := []struct {
		name      string
		svc       *egress.Service
		principal string
		in        *In
		want      string // the policy, or the error's code and words
	}{
		{"omitted: none", svc, "", nil, ""},
		{"empty: none", svc, "", &In{Allow: []string{}}, ""},
		{"within", svc, "", &In{Allow: []string{"x.corp.example:443"}}, "x.corp.example:443"},
		{"outside", svc, "", &In{Allow: []string{"api.test.example", "evil.example"}}, "INVALID_PARAMS evil.example"},
		{"malformed", svc, "", &In{Allow: []string{"https://api.test.example/"}}, "INVALID_PARAMS https://api.test.example/"},
		{"principal narrower", svc, "alice", &In{Allow: []string{"x.corp.example"}}, "INVALID_PARAMS x.corp.example"},
		{"principal within", svc, "alice", &In{Allow: []string{"api.test.example"}}, "api.test.example"},
		{"no network on server", nil, "", &In{Allow: []string{"api.test.example"}}, "NOT_ENABLED CODEXEC_EGRESS_ALLOW"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := tenant.With(context.Background(), tc.principal)
			p, err := Resolve(ctx, tc.svc, tc.in)
			got := p.String()
			var te *tool.Error
			if errors.As(err, &te) {
				got = te.Code
				for _, w := range strings.Fields(tc.want)[1:] {
					if strings.Contains(te.Message, w) {
						got += " " + w
					}
				}
			} else if err != nil {
				t.Fatalf("uncoded error %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestResolveNetworkDefaultCeiling: with CODEXEC_EGRESS_DEFAULT=ceiling a
// call without network gets the caller's ceiling, and a session keeps its
// own when a call replaces nothing.
func TestResolveNetworkDefaultCeiling(t *testing.T) {
	svc := newEgress(t, egress.Config{Ceiling: egress.Policy{Allow: mustRules(t, "api.test.example")}, DefaultCeiling: true})
	p, err := Resolve(context.Background(), svc, nil)
	if err != nil || p.String() != "api.test.example" {
		t.Errorf("omitted network with the default ceiling = %q, %v; want the ceiling", p, err)
	}
	if r, err := Replace(context.Background(), svc, nil); r != nil || err != nil {
		t.Errorf("Replace(nil) = %v, %v; want nil (keep the session's)", r, err)
	}
}
