//go:build !notrace

package pgstore

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/codexec/codexec/internal/pgtest"
	"github.com/codexec/codexec/internal/tracing"
	"github.com/codexec/codexec/internal/tracing/otlpsink"
)

func TestOperation(t *testing.T) {
	tests := map[string]string{
		"SELECT 1":                             "SELECT",
		"  insert into runs (id) values ($1)":  "INSERT",
		"WITH x AS (SELECT 1) SELECT * FROM x": "WITH",
		"select\n1":                            "SELECT",
		"secret_function('token')":             "",
		"":                                     "",
	}
	for sql, want := range tests {
		if got := operation(sql); got != want {
			t.Errorf("operation(%q) = %q, want %q", sql, got, want)
		}
	}
}

// TestQuerySpans: with traces exported (to a real OTLP/HTTP receiver on
// loopback), each statement is a client span under the caller's span,
// named for its operation, without the statement or its arguments; a
// failed one has an error status; a statement outside any trace (a
// background job's) is not recorded.
func TestQuerySpans(t *testing.T) {
	dsn := pgtest.Start(t).NewDatabase(t)
	ctx := context.Background()
	st, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rcv := otlpsink.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	shutdown, err := tracing.Setup(ctx, tracing.Config{Endpoint: rcv.URL, Protocol: "http/protobuf", ServiceName: "test"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(ctx)
	if _, err := st.pool.Exec(ctx, "SELECT 1"); err != nil { // outside any trace: no span
		t.Fatal(err)
	}
	pctx, parent := tracing.Start(ctx, tracing.Tracer("test"), "parent")
	if _, err := st.pool.Exec(pctx, "SELECT $1::text", "secret-argument"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.pool.Exec(pctx, "UPDATE no_such_table SET x = 1"); err == nil {
		t.Fatal("an update of a missing table succeeded")
	}
	parent.End()
	if err := tracing.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Name, System, Op string
		Child, Failed    bool
	}
	var spans []got
	var pid []byte
	for _, sp := range rcv.Spans() {
		if sp.Name == "parent" {
			pid = sp.SpanId
		}
	}
	for _, sp := range rcv.Spans() {
		if sp.Name == "parent" {
			continue
		}
		spans = append(spans, got{Name: sp.Name, System: otlpsink.Attr(sp, "db.system.name"), Op: otlpsink.Attr(sp, "db.operation.name"),
			Child: string(sp.ParentSpanId) == string(pid), Failed: sp.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR})
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.String(), "secret-argument") || strings.Contains(kv.Value.String(), "no_such_table") {
				t.Errorf("span %s exports the statement or its argument: %s", sp.Name, kv)
			}
		}
	}
	want := []got{{"SELECT", "postgresql", "SELECT", true, false}, {"UPDATE", "postgresql", "UPDATE", true, true}}
	if d := cmp.Diff(want, spans); d != "" {
		t.Errorf("query spans (-want +got):\n%s", d)
	}
}
