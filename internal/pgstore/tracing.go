package pgstore

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/tracing"
)

// tracer records one client span per statement sent to PostgreSQL.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/pgstore")

// queryTracer is the pool's pgx.QueryTracer: it counts the statements sent
// to PostgreSQL, each one round trip (the metric
// codexec_store_queries_total), and, while traces are exported, records
// each statement of a traced call as a client span named for its operation (SELECT, INSERT, …) with
// db.system.name and db.operation.name: never the statement's text or its
// arguments, which hold users' data.
type queryTracer struct{ n atomic.Int64 }

// querySpan is the context key of the span TraceQueryStart started, so
// that TraceQueryEnd ends that one and never a caller's.
type querySpan struct{}

// TraceQueryStart implements pgx.QueryTracer.
func (q *queryTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	if !tracing.On() || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx // off, or a background job's statement (heartbeats, retention): no trace of its own
	}
	op := operation(d.SQL)
	name := op
	if name == "" {
		name = "postgresql"
	}
	attrs := []attribute.KeyValue{attribute.String("db.system.name", "postgresql")}
	if op != "" {
		attrs = append(attrs, attribute.String("db.operation.name", op))
	}
	ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return context.WithValue(ctx, querySpan{}, span)
}

// TraceQueryEnd implements pgx.QueryTracer.
func (q *queryTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if span, ok := ctx.Value(querySpan{}).(trace.Span); ok {
		tracing.End(span, d.Err)
	}
}

// operations are the statement keywords a span is named after; any other
// first word is left out, so that no part of a statement but its kind is
// exported.
var operations = map[string]bool{"SELECT": true, "INSERT": true, "UPDATE": true, "DELETE": true, "WITH": true,
	"BEGIN": true, "COMMIT": true, "ROLLBACK": true, "CREATE": true, "ALTER": true, "DROP": true, "LOCK": true,
	"SET": true, "TRUNCATE": true, "COPY": true, "DO": true, "CALL": true, "SAVEPOINT": true, "RELEASE": true}

// operation is the statement's first keyword in capitals when it is one
// of operations, else "".
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	end := strings.IndexFunc(sql, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') })
	if end < 0 {
		end = len(sql)
	}
	if w := strings.ToUpper(sql[:end]); operations[w] {
		return w
	}
	return ""
}
