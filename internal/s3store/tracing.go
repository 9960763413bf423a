package s3store

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/tracing"
)

// tracer records one client span per request to the bucket.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/s3store")

// tracedTransport is the S3 client's transport: while traces are
// exported, each HTTP request to the bucket made for a traced call (a
// retry is a request of its own) is a client span "s3 {method}" in its
// trace, with the method, the response's status and the bucket host;
// never object keys (they name users' items), queries or bodies. Off, it
// is one atomic load in front of next.
type tracedTransport struct{ next http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (t tracedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !tracing.On() || !trace.SpanFromContext(req.Context()).IsRecording() {
		return t.next.RoundTrip(req) // off, or the sweeper's request: no trace of its own
	}
	ctx, span := tracer.Start(req.Context(), "s3 "+req.Method, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("rpc.system.name", "aws-api"), attribute.String("http.request.method", req.Method),
			attribute.String("server.address", req.URL.Hostname())))
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err == nil {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
		if resp.StatusCode >= 400 { // as the HTTP client convention says; a 404 is how a missing object answers
			code := strconv.Itoa(resp.StatusCode)
			span.SetAttributes(attribute.String("error.type", code))
			span.SetStatus(codes.Error, code)
		}
	}
	tracing.End(span, err)
	return resp, err
}
