package files

import (
	"context"
	"fmt"
	"io"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/codexec/codexec/internal/tracing"
)

// tracer records the store's operations.
var tracer = tracing.Tracer("github.com/codexec/codexec/internal/files")

// Traced is s with each operation recorded as a span (store.keep,
// store.put, store.get, store.read, store.copy_to, store.list) in the
// caller's trace while tracing is on, so a slow blob store shows in the
// call that waited for it. Spans name the store's kind and count bytes;
// never paths or contents. Off, each operation costs one atomic load more.
func Traced(s Store) Store {
	if s == nil {
		return nil
	}
	return tracedStore{s: s, kind: fmt.Sprintf("%T", s)}
}

type tracedStore struct {
	s    Store
	kind string
}

func (t tracedStore) start(ctx context.Context, name string) (context.Context, trace.Span) {
	ctx, span := tracing.Start(ctx, tracer, name, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("codexec.store.kind", t.kind))
	}
	return ctx, span
}

func (t tracedStore) Keep(ctx context.Context, id string, src *Root, paths []string) (Item, error) {
	ctx, span := t.start(ctx, "store.keep")
	it, err := t.s.Keep(ctx, id, src, paths)
	tracing.End(span, err)
	return it, err
}

func (t tracedStore) Put(ctx context.Context, id, path string, r io.Reader, o WriteOptions) (Item, Written, error) {
	ctx, span := t.start(ctx, "store.put")
	it, w, err := t.s.Put(ctx, id, path, r, o)
	tracing.End(span, err)
	return it, w, err
}

func (t tracedStore) Get(ctx context.Context, id string) (Item, error) {
	ctx, span := t.start(ctx, "store.get")
	it, err := t.s.Get(ctx, id)
	tracing.End(span, err)
	return it, err
}

func (t tracedStore) Read(ctx context.Context, id, path string, offset, length, max int64) ([]byte, Entry, error) {
	ctx, span := t.start(ctx, "store.read")
	b, e, err := t.s.Read(ctx, id, path, offset, length, max)
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("codexec.store.bytes", len(b)))
	}
	tracing.End(span, err)
	return b, e, err
}

func (t tracedStore) CopyTo(ctx context.Context, id string, dst *Root) ([]Written, error) {
	ctx, span := t.start(ctx, "store.copy_to")
	w, err := t.s.CopyTo(ctx, id, dst)
	tracing.End(span, err)
	return w, err
}

func (t tracedStore) List(ctx context.Context) []Item {
	ctx, span := t.start(ctx, "store.list")
	defer span.End()
	return t.s.List(ctx)
}
