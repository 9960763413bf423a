package engine

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/egress"
)

// TestNetworkDelta: a session run's audit is what its binding recorded
// during that run only.
func TestNetworkDelta(t *testing.T) {
	api := egress.Entry{Host: "api.test.example", Port: 443, Allowed: true, Connections: 1, BytesSent: 10, BytesReceived: 100}
	denied := egress.Entry{Host: "evil.example", Port: 443, Reason: "not in policy", Connections: 1}
	api2 := api
	api2.Connections, api2.BytesSent, api2.BytesReceived = 3, 30, 300
	cases := []struct {
		name      string
		prev, now []egress.Entry
		want      []egress.Entry
	}{
		{"first run", nil, []egress.Entry{api}, []egress.Entry{api}},
		{"nothing new", []egress.Entry{api}, []egress.Entry{api}, []egress.Entry{}},
		{"more of the same", []egress.Entry{api}, []egress.Entry{api2},
			[]egress.Entry{{Host: "api.test.example", Port: 443, Allowed: true, Connections: 2, BytesSent: 20, BytesReceived: 200}}},
		{"a new denial", []egress.Entry{api}, []egress.Entry{api, denied}, []egress.Entry{denied}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NetworkDelta(tc.prev, tc.now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestHostNetworkSaysSo: without isolation a run has the host's network;
// a run given a policy says so (network_mode host, no audit, nothing
// pretending to filter), a run without one says nothing, and the log
// entry records the same.
func TestHostNetworkSaysSo(t *testing.T) {
	e := newTestEngine(t)
	rules, err := egress.ParseRules("api.test.example")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		policy egress.Policy
		want   string
	}{{"with a policy", egress.Policy{Allow: rules}, NetworkHost}, {"without", egress.Policy{}, ""}} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Execute(context.Background(), Request{Language: "bash", Code: "echo ok", Network: tc.policy})
			if err != nil || res.Status != StatusSuccess {
				t.Fatalf("run: %v %+v", err, res)
			}
			if res.NetworkMode != tc.want || res.Network != nil {
				t.Errorf("network_mode %q network %v, want %q and no audit", res.NetworkMode, res.Network, tc.want)
			}
		})
	}
}
