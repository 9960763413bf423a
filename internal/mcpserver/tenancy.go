package mcpserver

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/quota"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/codexec/codexec/internal/tracing"
)

// executionTools run code or programs: each call holds one of its
// principal's execution slots (Deps.Limiter) while it runs.
var executionTools = map[string]bool{
	"execute_code": true, "send_to_session": true, "run_code": true, "run_script": true,
	"execute_command": true, "execute_process": true, "install_package": true,
}

// errNoPrincipal refuses an authenticated request whose token names nobody:
// treating it as Local would hand it the stdio user's state.
var errNoPrincipal = errors.New("the request's credentials name no principal")

// tenancy is the one place where a request's principal is decided and put
// into its context (tenant.With): the verified token's user when the
// transport authenticated the request (HTTP, or a call forwarded by another
// replica), else tenant.Local (stdio). Every handler and store below reads
// it with tenant.From.
func (s *Server) tenancy(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p := tenant.Local
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			if p = extra.TokenInfo.UserID; p == "" && !harmless(method) {
				return nil, errNoPrincipal
			}
		}
		return next(tenant.With(ctx, p), method, req)
	}
}

// slots makes calls of executionTools take an execution slot of their
// principal first; a principal over its quota gets a "busy" tool error
// after the queue wait. It runs after forward, so a call forwarded to
// another replica holds a slot there only.
func (s *Server) slots(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if !ok || call.Params == nil || !executionTools[call.Params.Name] || s.deps.Limiter == nil {
			return next(ctx, method, req)
		}
		waitStart := time.Now()
		release, err := s.deps.Limiter.Acquire(ctx, tenant.From(ctx))
		tracing.Waited(ctx, tracer, "admission", waitStart, err)
		if err != nil {
			return s.reg.ErrorResultFor(call.Params.Name, err), nil
		}
		// A background run takes the slot over (quota.Keep) and frees it
		// when it ends.
		ctx, done := quota.WithSlot(ctx, release)
		defer done()
		return next(ctx, method, req)
	}
}

// harmless methods touch no principal's state.
func harmless(method string) bool {
	return method == "initialize" || method == "ping" || strings.HasPrefix(method, "notifications/")
}
