package logindex

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/tenant"
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
	// "" means ctx's principal (tenant.From). tenant.Local's executions
	// include those recorded without an owner.
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
	// starts at the newest. It is opaque; one that is not a Page.Next is
	// ErrInvalidQuery.
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
	// Denied is the number of distinct hosts the run was refused.
	Denied int `json:"denied,omitempty"`
}

// Page is one page of Browse: Rows newest first, Next the cursor of the
// next (older) page or "" at the end, Total the number of matches of the
// whole listing (not only from the cursor on) counted up to
// BrowseCountCap+1 (a total above BrowseCountCap means "more than").
type Page struct {
	Rows  []Row  `json:"rows"`
	Next  string `json:"next,omitempty"`
	Total int    `json:"total"`
}

// Window is the executions an Overview summarises: those of Scope from
// Since up to Until (exclusive; zero means now), in buckets of Bucket
// (default one hour) starting at Since (zero means 24 hours before
// Until). An execution is in the bucket of its executed_at, as
// Query.Since compares it (TimeKey). At most MaxBuckets buckets.
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
	P50 time.Duration `json:"p50"`
	P90 time.Duration `json:"p90"`
	// Sandboxes counts executions by how their sandbox was obtained (warm,
	// forked, cold); executions that did not record it are not counted.
	Sandboxes map[string]int `json:"sandboxes"`
	// Denied is the number of refused hosts, summed over the executions
	// (Row.Denied), and DeniedHosts the most refused hosts, most first
	// then by name (at most TopHosts).
	Denied      int         `json:"denied"`
	DeniedHosts []HostCount `json:"denied_hosts"`
}

// Bucket is one time bucket of an Overview.
type Bucket struct {
	Start    time.Time      `json:"start"`
	ByStatus map[string]int `json:"by_status"`
}

// HostCount is a host and how many executions were refused it.
type HostCount struct {
	Host  string `json:"host"`
	Count int    `json:"count"`
}

// BrowseCountCap bounds Page.Total: pages are continued by cursor, not
// numbered, so a reader needs "how many" only while it is small, and
// counting further would cost every page of a large listing more than
// reading it (tens of milliseconds for a common word in 100,000
// executions).
const BrowseCountCap = 1000

// TopHosts is how many hosts Overview.DeniedHosts lists at most.
const TopHosts = 10

// MaxBuckets bounds the buckets of one Window (a week of minutes).
const MaxBuckets = 7 * 24 * 60

// Resolve is whose executions s sees in ctx: owner's, or every
// principal's when all is set.
func (s Scope) Resolve(ctx context.Context) (owner string, all bool) {
	switch {
	case s.All && s.Owner == "":
		return "", true
	case s.Owner != "":
		return s.Owner, false
	}
	return tenant.From(ctx), false
}

// cursorPrefix marks a cursor this package made (and versions it).
const cursorPrefix = "k1."

// EncodeCursor is the Page.Next continuing after the execution of
// ordering key key (Fields.Key as stored).
func EncodeCursor(key int64) string { return cursorPrefix + strconv.FormatInt(key, 36) }

// DecodeCursor returns the ordering key a cursor continues after (0 for
// "", the start), or ErrInvalidQuery for one EncodeCursor did not make.
func DecodeCursor(c string) (int64, error) {
	if c == "" {
		return 0, nil
	}
	k, err := strconv.ParseInt(strings.TrimPrefix(c, cursorPrefix), 36, 64)
	if err != nil || !strings.HasPrefix(c, cursorPrefix) || k <= 0 {
		return 0, fmt.Errorf("%w: the page cursor %q is not one this server gave", ErrInvalidQuery, c)
	}
	return k, nil
}

// ValidateFilter checks f as Browse does and returns the key its cursor
// continues after (0 at the start): ErrInvalidQuery for a bad status,
// text without words or a malformed cursor.
func ValidateFilter(f Filter) (int64, error) {
	if err := ValidateQuery(f.Query); err != nil {
		return 0, err
	}
	return DecodeCursor(f.Cursor)
}

// Normalize fills w's defaults as of now (Until now, Since 24 hours
// before, one-hour buckets) and checks it: ErrInvalidQuery for an empty
// or reversed window, a negative bucket, or more than MaxBuckets buckets.
func (w Window) Normalize(now time.Time) (Window, error) {
	if w.Until.IsZero() {
		w.Until = now
	}
	if w.Since.IsZero() {
		w.Since = w.Until.Add(-24 * time.Hour)
	}
	if w.Bucket == 0 {
		w.Bucket = time.Hour
	}
	switch {
	case !w.Since.Before(w.Until):
		return w, fmt.Errorf("%w: the window's start %s is not before its end %s", ErrInvalidQuery, w.Since, w.Until)
	case w.Bucket < time.Millisecond:
		return w, fmt.Errorf("%w: a bucket must be at least a millisecond, got %s", ErrInvalidQuery, w.Bucket)
	case w.Buckets() > MaxBuckets:
		return w, fmt.Errorf("%w: %d buckets, at most %d", ErrInvalidQuery, w.Buckets(), MaxBuckets)
	}
	return w, nil
}

// Buckets is the number of buckets of a normalized w.
func (w Window) Buckets() int {
	return int((w.Until.Sub(w.Since) + w.Bucket - 1) / w.Bucket)
}

// Keys are the ordering keys w covers: Since's TimeKey up to Until's
// (exclusive), and the key span of one bucket.
func (w Window) Keys() (from, until, bucket int64) {
	return TimeKey(w.Since), TimeKey(w.Until), w.Bucket.Milliseconds() * ridSlots
}

// NewOverview is the Overview of a normalized w with nothing counted:
// every bucket present and empty.
func NewOverview(w Window) Overview {
	o := Overview{Buckets: make([]Bucket, w.Buckets()), Sandboxes: map[string]int{}, DeniedHosts: []HostCount{}}
	for i := range o.Buckets {
		o.Buckets[i] = Bucket{Start: w.Since.Add(time.Duration(i) * w.Bucket).UTC(), ByStatus: map[string]int{}}
	}
	return o
}

// Add counts n executions of bucket i (as (key - from) / bucket of
// Window.Keys), status, sandbox, refused denied hosts in all.
func (o *Overview) Add(i int64, status, sandbox string, n, denied int) {
	if i >= 0 && i < int64(len(o.Buckets)) {
		o.Buckets[i].ByStatus[status] += n
	}
	o.Runs += n
	if sandbox != "" {
		o.Sandboxes[sandbox] += n
	}
	o.Denied += denied
}

// SetPercentiles sets o's P50 and P90 from a histogram of the window's
// durations (distinct values in ms, any order, with their counts): the
// values at PercentileRanks of o.Runs. A store gets the histogram with
// one GROUP BY, which costs less than sorting the window (there are far
// fewer distinct milliseconds than executions).
func (o *Overview) SetPercentiles(hist map[int64]int) {
	values := make([]int64, 0, len(hist))
	for v := range hist {
		values = append(values, v)
	}
	slices.Sort(values)
	p50, p90 := PercentileRanks(o.Runs)
	seen := 0
	for _, v := range values {
		before := seen
		seen += hist[v]
		if before < p50 && p50 <= seen {
			o.P50 = time.Duration(v) * time.Millisecond
		}
		if before < p90 && p90 <= seen {
			o.P90 = time.Duration(v) * time.Millisecond
		}
	}
}

// PercentileRanks are the 1-based ranks, in n durations sorted
// ascending, of the 50th and 90th percentiles (nearest rank).
func PercentileRanks(n int) (p50, p90 int) {
	// ceil(n/2) and ceil(9n/10) in integers: no floating-point rounding.
	return max(1, (n+1)/2), max(1, (9*n+9)/10)
}

// ValueLister lists the values a console offers in its filters. Both
// history stores implement it with one index seek per distinct value (a
// loose index scan), so it costs the number of values, not of executions.
type ValueLister interface {
	// Values returns the distinct languages and tools (recorded ones: ""
	// left out) of scope's executions, sorted.
	Values(ctx context.Context, scope Scope) (Values, error)
}

// Values are the distinct values of a scope's executions.
type Values struct {
	Languages []string `json:"languages"`
	Tools     []string `json:"tools"`
}

// DistinctSQL is the loose index scan of Values for column (language or
// tool) of table: the smallest value, then repeatedly the smallest one
// above the last. ownerCond ("" for every owner) restricts each step and
// takes one argument per step (the caller passes it twice); a store
// rewrites the "?" placeholders as it needs.
func DistinctSQL(table, column, ownerCond string) string {
	where := ""
	if ownerCond != "" {
		where = " AND " + ownerCond
	}
	return `WITH RECURSIVE v(x) AS (SELECT (SELECT min(` + column + `) FROM ` + table + ` WHERE true` + where + `)
		UNION ALL SELECT (SELECT min(` + column + `) FROM ` + table + ` WHERE ` + column + ` > v.x` + where + `)
		FROM v WHERE v.x IS NOT NULL) SELECT x FROM v WHERE x IS NOT NULL AND x <> ''`
}
