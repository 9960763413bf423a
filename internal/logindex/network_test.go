package logindex

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/egress"
	"github.com/codexec/codexec/internal/execlog"
)

func TestSearchByNetworkHost(t *testing.T) {
	x, lg, _ := newIndex(t)
	now := time.Now().UTC()
	entries := []execlog.Entry{
		{ExecutionID: "exec_n1", Language: "python", Code: "get api", Status: "success", ExitCode: ip(0), ExecutedAt: now.Add(-3 * time.Second),
			Network: []egress.Entry{{Host: "api.test.example", Port: 443, Allowed: true, Connections: 1}}},
		{ExecutionID: "exec_n2", Language: "python", Code: "get evil", Status: "execution_error", ExitCode: ip(1), ExecutedAt: now.Add(-2 * time.Second),
			Network: []egress.Entry{{Host: "evil.test.example", Port: 443, Reason: "not in policy", Connections: 1},
				{Host: "api.test.example", Port: 443, Allowed: true, Connections: 2}}},
		{ExecutionID: "exec_n3", Language: "python", Code: "no network", Status: "success", ExitCode: ip(0), ExecutedAt: now.Add(-time.Second)},
	}
	for _, e := range entries {
		if err := lg.AppendExecution(e); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name string
		q    Query
		want []string
	}{
		{"reached", Query{Host: "api.test.example"}, []string{"exec_n2", "exec_n1"}},
		{"reached, case and final dot ignored", Query{Host: "API.test.example."}, []string{"exec_n2", "exec_n1"}},
		{"denied", Query{DeniedHost: "evil.test.example"}, []string{"exec_n2"}},
		{"denied is not reached", Query{Host: "evil.test.example"}, []string{}},
		{"with text", Query{Host: "api.test.example", Text: "evil"}, []string{"exec_n2"}},
		{"with status", Query{Host: "api.test.example", Status: "success"}, []string{"exec_n1"}},
		{"unknown host", Query{Host: "other.example"}, []string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			hits, total, err := x.Search(context.Background(), tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, ids(hits)); diff != "" || total != len(tc.want) {
				t.Errorf("hits (-want +got):\n%s total %d", diff, total)
			}
		})
	}
}
