package egress

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/tracing"
)

// Reasons a connection is denied (Entry.Reason).
const (
	ReasonNotInPolicy = "not in policy"
	ReasonPrivate     = "private address"
	ReasonIPLiteral   = "ip literal"
	ReasonSNI         = "sni mismatch"
	ReasonNoName      = "no name"
	ReasonLimit       = "limit"
	ReasonUnreachable = "upstream unreachable"
	ReasonHostHeader  = "host header mismatch"
	// ReasonLookup: the program looked up a name the policy does not
	// allow (the entry's Port is 0: no connection was possible).
	ReasonLookup = "name lookup refused"
)

// maxLookupEntries bounds the audit entries of refused name lookups, so a
// program that looks up endless names cannot grow its run's result.
const maxLookupEntries = 64

// lookupDenied records that the program looked up name and was refused:
// once per name, for at most maxLookupEntries names per run.
func (b *Binding) lookupDenied(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := dest{host: name}
	if b.audit[d] == nil {
		if b.lookups >= maxLookupEntries {
			return
		}
		b.lookups++
	}
	b.entryLocked(d).Reason = ReasonLookup
	if b.span != nil {
		b.span.AddEvent("egress.connection", trace.WithAttributes(attribute.String("server.address", name),
			attribute.Bool("codexec.egress.allowed", false), attribute.String("codexec.egress.reason", ReasonLookup)))
	}
}

// admit checks the binding's limits for a new connection to an allowed
// destination and counts it against the run's total.
func (b *Binding) admit() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.total >= b.limits.MaxConns || len(b.conns) > b.limits.MaxOpenConns || b.bytes >= b.limits.MaxBytes {
		return false
	}
	b.total++
	return true
}

// entryLocked returns d's audit entry, creating it; b.mu is held.
func (b *Binding) entryLocked(d dest) *Entry {
	e := b.audit[d]
	if e == nil {
		e = &Entry{Host: d.host, Port: d.port}
		b.audit[d] = e
	}
	return e
}

// allow records an allowed connection to d.
func (b *Binding) allow(d dest, intercepted bool) {
	b.mu.Lock()
	e := b.entryLocked(d)
	e.Allowed = true
	e.Connections++
	e.Intercepted = e.Intercepted || intercepted
	b.mu.Unlock()
	b.s.allowed.Add(1)
	b.traceConn(d, true, "")
}

// deny records a denied connection to d. An entry with allowed
// connections stays Allowed; Reason keeps the last denial.
func (b *Binding) deny(d dest, reason string) {
	b.mu.Lock()
	e := b.entryLocked(d)
	e.Connections++
	e.Reason = reason
	b.mu.Unlock()
	b.s.denied.Add(1)
	b.traceConn(d, false, reason)
	slog.Debug("egress: connection denied", "run", b.runID, "principal", b.principal, "host", d.host, "port", d.port, "reason", reason)
}

// count adds bytes moved for d and reports whether the run is still
// within its byte limit; past it, d's entry says it was cut ("limit").
func (b *Binding) count(d dest, sent, recv int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.entryLocked(d)
	e.BytesSent += sent
	e.BytesReceived += recv
	b.bytes += sent + recv
	if b.bytes > b.limits.MaxBytes {
		e.Reason = ReasonLimit
		return false
	}
	return true
}

// note records why an allowed connection to d was ended early (its
// program was told: the interception side answers 403 or 502).
func (b *Binding) note(d dest, reason string) {
	b.mu.Lock()
	b.entryLocked(d).Reason = reason
	b.mu.Unlock()
}

// TraceIn makes ctx's span (the call that runs the program) the one each
// of the run's connections (and refused name lookups) is recorded on, as
// an event: destination, allowed or not and why; never what was sent. A no-op while tracing is
// off. A session's binding is pointed at each send's span in turn.
func (b *Binding) TraceIn(ctx context.Context) {
	if b == nil || !tracing.On() {
		return
	}
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		span = nil
	}
	b.mu.Lock()
	b.span = span
	b.mu.Unlock()
}

// traceConn adds the event of one connection to d to the run's span.
func (b *Binding) traceConn(d dest, allowed bool, reason string) {
	b.mu.Lock()
	span := b.span
	b.mu.Unlock()
	if span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String("server.address", d.host), attribute.Int("server.port", d.port),
		attribute.Bool("codexec.egress.allowed", allowed)}
	if reason != "" {
		attrs = append(attrs, attribute.String("codexec.egress.reason", reason))
	}
	span.AddEvent("egress.connection", trace.WithAttributes(attrs...))
}
