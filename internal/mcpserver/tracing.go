package mcpserver

import (
	"context"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/sessionreg"
	"github.com/codexec/codexec/internal/tracing"
)

// tracer records the span of every MCP request this server receives.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/mcpserver")

// traced is the outermost middleware: while tracing is on, each request
// gets one server span named as the MCP semantic convention says
// ("tools/call execute_code"), a child of the trace context the client
// sent in params._meta (traceparent, tracestate) or, failing that, in the
// HTTP headers; while metrics export is on, its duration goes into the
// convention's mcp.server.operation.duration histogram. Both off, it only
// passes the request on.
func (s *Server) traced(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		spans, metrics := tracing.On(), tracing.MetricsOn()
		if !spans && !metrics {
			return next(ctx, method, req)
		}
		start := time.Now()
		target := requestTarget(req)
		var span trace.Span
		if spans {
			name := method
			if target != "" {
				name += " " + target
			}
			ctx, span = tracer.Start(parentContext(ctx, req), name, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(requestAttributes(method, target, req)...))
			defer span.End()
		}
		res, err := next(ctx, method, req)
		errType, code := outcome(res, err)
		if spans {
			recordOutcome(span, errType, code)
		}
		if metrics {
			tracing.RecordOperation(ctx, time.Since(start).Seconds(), operationAttributes(method, target, errType, req)...)
		}
		return res, err
	}
}

// operationAttributes are the attributes of the request's duration: the
// convention's, with low cardinality (no session id).
func operationAttributes(method, target, errType string, req mcp.Request) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, attribute.String("mcp.method.name", method))
	if _, ok := req.(*mcp.CallToolRequest); ok && target != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", target))
	}
	if errType != "" {
		attrs = append(attrs, attribute.String("error.type", errType))
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", ip.ProtocolVersion))
		}
	}
	transport := "pipe" // stdio
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		transport = "tcp" // Streamable HTTP, or a call forwarded by another replica
	}
	return append(attrs, attribute.String("network.transport", transport))
}

// parentContext is ctx with the remote span context the request carries:
// _meta's traceparent first (the MCP convention), else the HTTP headers.
func parentContext(ctx context.Context, req mcp.Request) context.Context {
	prop := otel.GetTextMapPropagator()
	if p := req.GetParams(); p != nil {
		if meta := p.GetMeta(); meta != nil {
			c := propagation.MapCarrier{}
			for _, k := range []string{"traceparent", "tracestate", "baggage"} {
				if v, ok := meta[k].(string); ok {
					c[k] = v
				}
			}
			if c["traceparent"] != "" {
				return prop.Extract(ctx, c)
			}
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		return prop.Extract(ctx, propagation.HeaderCarrier(ex.Header))
	}
	return ctx
}

// requestTarget is what the convention puts after the method in the span
// name: the tool or prompt called. A resource's URI is left out of the
// name (it can name a user's file) and kept as an attribute only.
func requestTarget(req mcp.Request) string {
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil {
			return r.Params.Name
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil {
			return r.Params.Name
		}
	}
	return ""
}

// requestAttributes are the convention's attributes of a request: names
// and ids only, never arguments.
func requestAttributes(method, target string, req mcp.Request) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method)}
	if _, ok := req.(*mcp.CallToolRequest); ok && target != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", target),
			attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, attribute.String("mcp.session.id", id))
		}
		if ip := ss.InitializeParams(); ip != nil && ip.ProtocolVersion != "" {
			attrs = append(attrs, attribute.String("mcp.protocol.version", ip.ProtocolVersion))
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		attrs = append(attrs, attribute.String("network.protocol.name", "http"))
	}
	return attrs
}

// outcome is the error.type of a request that failed, "" when it did
// not: the JSON-RPC error code (code is it, else 0), _OTHER for another
// error, or tool_error for a tool's error result.
func outcome(res mcp.Result, err error) (errType string, code int64) {
	if err != nil {
		if we, ok := err.(*jsonrpc.Error); ok {
			return strconv.FormatInt(we.Code, 10), we.Code
		}
		return "_OTHER", 0
	}
	if r, ok := res.(*mcp.CallToolResult); ok && r != nil && r.IsError {
		return "tool_error", 0
	}
	return "", 0
}

// recordOutcome sets error.type (and the span's status) for a request that
// failed, and the JSON-RPC error code when there is one.
func recordOutcome(span trace.Span, errType string, code int64) {
	if errType == "" {
		return
	}
	if code != 0 {
		span.SetAttributes(attribute.Int64("rpc.response.status_code", code))
	}
	span.SetAttributes(attribute.String("error.type", errType))
	span.SetStatus(codes.Error, errType)
}

// startForward starts the client span of a hop to the replica owner.
func startForward(ctx context.Context, owner sessionreg.Replica) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, tracer, "forward", trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("codexec.replica.owner", owner.ID))
	}
	return ctx, span
}

// withTrace is meta with ctx's trace context in it (traceparent,
// tracestate), replacing the caller's, so the owner's span of a forwarded
// request is a child of the hop; meta itself is not changed. Off, meta.
func withTrace(ctx context.Context, meta mcp.Meta) mcp.Meta {
	if !tracing.On() {
		return meta
	}
	c := propagation.MapCarrier{}
	otel.GetTextMapPropagator().Inject(ctx, c)
	if len(c) == 0 {
		return meta
	}
	out := make(mcp.Meta, len(meta)+len(c))
	for k, v := range meta {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}
