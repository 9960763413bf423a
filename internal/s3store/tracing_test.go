//go:build !notrace

package s3store

import (
	"context"
	"strings"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/codexec/codexec/internal/s3store/s3test"
	"github.com/codexec/codexec/internal/tracing"
	"github.com/codexec/codexec/internal/tracing/otlpsink"
)

// TestRequestSpans: with traces exported (to a real OTLP/HTTP receiver),
// each request to the bucket is a client span under the operation's
// span, with its method and status; a missing object's 404 is an error
// span; no object key (made from item ids) is exported.
func TestRequestSpans(t *testing.T) {
	srv := s3test.Start(t)
	s := open(t, serverOptions(srv, "traced"))
	ctx := context.Background()
	rcv := otlpsink.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL)
	shutdown, err := tracing.Setup(ctx, tracing.Config{Endpoint: rcv.URL, Protocol: "http/protobuf", ServiceName: "test"}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer shutdown(ctx)
	const missing = "item0123456789missing"
	pctx, parent := tracing.Start(ctx, tracing.Tracer("test"), "parent")
	if _, err := s.Get(pctx, missing); err == nil {
		t.Fatal("Get of a missing item succeeded")
	}
	parent.End()
	if err := tracing.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	var pid []byte
	for _, sp := range spans {
		if sp.Name == "parent" {
			pid = sp.SpanId
		}
	}
	var gets int
	for _, sp := range spans {
		for _, kv := range sp.Attributes {
			if strings.Contains(kv.Value.String(), missing) {
				t.Errorf("span %s exports an object key: %s", sp.Name, kv)
			}
		}
		if sp.Name != "s3 GET" {
			continue
		}
		gets++
		if string(sp.ParentSpanId) != string(pid) {
			t.Errorf("s3 GET is not a child of the operation's span")
		}
		if got := statusCode(sp); got != 404 {
			t.Errorf("s3 GET of a missing manifest: http.response.status_code %d, want 404", got)
		}
		if sp.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR || otlpsink.Attr(sp, "error.type") != "404" {
			t.Errorf("s3 GET answered 404: status %v error.type %q", sp.GetStatus(), otlpsink.Attr(sp, "error.type"))
		}
	}
	if gets == 0 {
		t.Fatalf("no s3 GET span among %d spans", len(spans))
	}
}

func statusCode(sp *tracepb.Span) int64 {
	for _, kv := range sp.Attributes {
		if kv.Key == "http.response.status_code" {
			return kv.Value.GetIntValue()
		}
	}
	return 0
}
