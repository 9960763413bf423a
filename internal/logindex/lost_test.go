package logindex

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/execlog"
)

// TestLostRuns checks that a run logged as lost from its started record is
// indexed with status lost, found by that filter and by its code, and that
// the started records older versions wrote to the history before each run
// are not executions.
func TestLostRuns(t *testing.T) {
	x, lg, _ := newIndex(t)
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Minute)
	done := execlog.Started{ExecutionID: "exec_done", Language: "bash", Code: "echo done", ExecutedAt: at}
	lost := execlog.Started{ExecutionID: "exec_lost", Language: "bash", Code: "sleep 300 unfinished", ExecutedAt: at.Add(time.Second)}
	for _, s := range []execlog.Started{done, lost} {
		old := struct {
			Type string `json:"type"`
			execlog.Started
		}{"started", s}
		if err := lg.Append(execlog.DailyFile(s.ExecutedAt), old); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.AppendExecution(execlog.Entry{ExecutionID: "exec_done", Language: "bash", Code: "echo done", Status: "success", ExitCode: ip(0), ExecutedAt: at}); err != nil {
		t.Fatal(err)
	}
	if err := lg.AppendExecution(execlog.Lost(lost)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{Status: "lost"}, {Status: "lost", Text: "unfinished"}, {Text: "unfinished"}} {
		hits, total, err := x.Search(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if d := cmp.Diff([]string{"exec_lost"}, ids(hits)); d != "" || total != 1 {
			t.Errorf("search %+v: total %d (-want +got):\n%s", q, total, d)
		}
	}
	all, total, err := x.Search(ctx, Query{})
	if err != nil || total != 2 {
		t.Errorf("all executions: %v total %d, %v; want the two executions and no started record", ids(all), total, err)
	}
	e, err := x.Get(ctx, "exec_lost")
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != execlog.StatusLost || e.ExitCode != nil || e.Code != lost.Code || e.ErrorMessage == "" {
		t.Errorf("lost entry: %+v", e)
	}
}
