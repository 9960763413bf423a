package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/codexec/codexec/internal/mcpserver"
	"github.com/codexec/codexec/internal/tracing"
)

// traceFlushWait bounds the export of the last spans and metrics at exit, so an
// unreachable collector cannot hold a shutdown.
const traceFlushWait = 5 * time.Second

// startTracing turns on OpenTelemetry trace and metric export when the
// standard OTEL_* variables ask for it, and returns what flushes it at exit. A
// malformed variable is a configuration error (ok false, message printed).
func startTracing(ctx context.Context) (flush func(), ok bool) {
	c, err := tracing.ConfigFromEnv(os.Getenv)
	if err == nil {
		var shutdown tracing.Shutdown
		if shutdown, err = tracing.Setup(ctx, c, mcpserver.Version); err == nil {
			return func() {
				fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceFlushWait)
				defer cancel()
				if err := shutdown(fctx); err != nil {
					fmt.Fprintln(os.Stderr, "codexec: the last traces or metrics could not be exported:", err)
				}
			}, true
		}
	}
	fmt.Fprintf(os.Stderr, "codexec: configuration error: %v\n", err)
	return nil, false
}
