package config

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEgressSettings(t *testing.T) {
	c, err := load(t, nil, map[string]string{
		"CODEXEC_EGRESS_ALLOW":           "api.test.example, *.corp.example:8443",
		"CODEXEC_PRINCIPAL_EGRESS_ALLOW": "alice=api.test.example; bob=x.corp.example:8443",
		"CODEXEC_EGRESS_DEFAULT":         "ceiling",
		"CODEXEC_EGRESS_RESOLVE":         "api.test.example=127.0.0.1,V6.test.example=::1",
	})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{"allow": joinRules(c.Egress.Allow), "alice": joinRules(c.Egress.Principals["alice"]),
		"bob": joinRules(c.Egress.Principals["bob"]), "default": c.Egress.Default}
	want := map[string]string{"allow": "api.test.example,*.corp.example:8443", "alice": "api.test.example",
		"bob": "x.corp.example:8443", "default": "ceiling"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("egress settings (-want +got):\n%s", diff)
	}
	pins := map[string]netip.Addr{"api.test.example": netip.MustParseAddr("127.0.0.1"), "v6.test.example": netip.MustParseAddr("::1")}
	if diff := cmp.Diff(pins, c.Egress.Pins, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("pins (-want +got):\n%s", diff)
	}
}

func TestEgressDefaultsToNoNetwork(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Egress.Allow) != 0 || c.Egress.Default != EgressDefaultNone || len(c.Egress.Pins) != 0 {
		t.Errorf("default egress = %+v, want no ceiling, default none, no pins", c.Egress)
	}
}

func TestEgressBadSettingsRefused(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"bad rule", map[string]string{"CODEXEC_EGRESS_ALLOW": "api.test.example,http://x.example/"}, []string{"CODEXEC_EGRESS_ALLOW", "http://x.example/"}},
		{"bad default", map[string]string{"CODEXEC_EGRESS_DEFAULT": "all"}, []string{"CODEXEC_EGRESS_DEFAULT", "all"}},
		{"pin without ip", map[string]string{"CODEXEC_EGRESS_RESOLVE": "api.test.example"}, []string{"CODEXEC_EGRESS_RESOLVE", "host=ip"}},
		{"pin bad ip", map[string]string{"CODEXEC_EGRESS_RESOLVE": "api.test.example=300.1.1.1"}, []string{"CODEXEC_EGRESS_RESOLVE", "300.1.1.1"}},
		{"principal rule malformed", map[string]string{"CODEXEC_EGRESS_ALLOW": "a.example", "CODEXEC_PRINCIPAL_EGRESS_ALLOW": "alice"}, []string{"CODEXEC_PRINCIPAL_EGRESS_ALLOW", "PRINCIPAL=RULE"}},
		{"principal wider than server", map[string]string{"CODEXEC_EGRESS_ALLOW": "a.example", "CODEXEC_PRINCIPAL_EGRESS_ALLOW": "alice=a.example,b.example"},
			[]string{"CODEXEC_PRINCIPAL_EGRESS_ALLOW", "alice", "b.example"}},
		{"principal without server ceiling", map[string]string{"CODEXEC_PRINCIPAL_EGRESS_ALLOW": "alice=a.example"}, []string{"CODEXEC_PRINCIPAL_EGRESS_ALLOW", "a.example"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, nil, tc.env)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}
