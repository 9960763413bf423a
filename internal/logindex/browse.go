package logindex

import (
	"context"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

// Browser is the execution history as the console reads it: pages of
// executions under more filters than search_execution_logs has, one
// execution by id, and an overview of a time window. Every history store
// (the embedded index and the shared database) implements it with the
// same semantics. Reads only: a Browser never changes the history.
//
// Whose executions are seen is the Scope's, not ctx's principal alone, so
// an operator can look at every principal's; the caller (the console)
// decides who may ask for which Scope.
type Browser interface {
	// Browse returns one page of the executions f selects, newest first.
	// Errors: ErrInvalidQuery (a bad filter or cursor), ErrUnavailable.
	Browse(ctx context.Context, f Filter) (Page, error)
	// Inspect returns one execution within scope, or ErrNotFound (also
	// for an execution that exists outside scope).
	Inspect(ctx context.Context, id string, scope Scope) (execlog.Entry, error)
	// Overview summarises the executions of w.
	Overview(ctx context.Context, w Window) (Overview, error)
}

// Scope is whose executions a Browser call sees.
type Scope struct {
	// All sees every principal's executions (an operator); Owner, when
	// set with All, narrows them to that one principal.
	All bool
	// Owner is the principal whose executions are seen when All is false;
	// "" means ctx's principal (tenant.From).
	Owner string
}

// Filter selects executions for Browse. Zero fields do not filter.
type Filter struct {
	Scope
	// Query's fields filter as in Search (Language, Status, Text, Host,
	// DeniedHost, Since; Limit is the page size, default 20, at most
	// MaxLimit).
	Query
	// Tool is the MCP tool that ran the execution (execlog.Entry.Tool).
	Tool string
	// SessionID keeps the executions of one session or context.
	SessionID string
	// Until keeps executions before it (exclusive).
	Until time.Time
	// Cursor continues a listing: Page.Next of the previous page; ""
	// starts at the newest.
	Cursor string
}

// Row is one execution in a Page: Hit's fields and the ones the console
// shows in its list.
type Row struct {
	Hit
	Tool  string `json:"tool,omitempty"`
	Owner string `json:"owner"`
	// EndReason is why the run ended (runreport); "" when not recorded.
	EndReason string `json:"end_reason,omitempty"`
	// Sandbox is how the sandbox was obtained (warm, forked, cold); "" when
	// not recorded.
	Sandbox string `json:"sandbox,omitempty"`
	// Denied is the number of network destinations the run was refused.
	Denied int `json:"denied,omitempty"`
}

// Page is one page of Browse: Rows newest first, Next the cursor of the
// next (older) page or "" at the end, Total the number of matches counted
// up to CountCap+1.
type Page struct {
	Rows  []Row  `json:"rows"`
	Next  string `json:"next,omitempty"`
	Total int    `json:"total"`
}

// Window is the executions an Overview summarises: those of Scope from
// Since up to Until (exclusive; zero means now), in buckets of Bucket
// (default one hour).
type Window struct {
	Scope
	Since, Until time.Time
	Bucket       time.Duration
}

// Overview is a summary of a Window.
type Overview struct {
	// Buckets are the window's buckets, oldest first, every bucket present
	// (empty ones too), each counting executions by search status
	// (Statuses).
	Buckets []Bucket `json:"buckets"`
	// Runs is the number of executions in the window.
	Runs int `json:"runs"`
	// P50 and P90 are duration percentiles over the window's executions.
	P50, P90 time.Duration
	// Sandboxes counts executions by how their sandbox was obtained (warm,
	// forked, cold); executions that did not record it are not counted.
	Sandboxes map[string]int `json:"sandboxes"`
	// Denied is the number of refused network destinations, and
	// DeniedHosts the most refused hosts, most first (at most 10).
	Denied      int         `json:"denied"`
	DeniedHosts []HostCount `json:"denied_hosts"`
}

// Bucket is one time bucket of an Overview.
type Bucket struct {
	Start    time.Time      `json:"start"`
	ByStatus map[string]int `json:"by_status"`
}

// HostCount is a host and how many times it was refused.
type HostCount struct {
	Host  string `json:"host"`
	Count int    `json:"count"`
}
