package logindex

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/execlog"
)

// Fields is what the index records of one execution entry: the Hit that
// Search returns, its owner, the ordering key, and the text its words are
// searched in. A shared store records the same fields so that its searches
// give the same results.
type Fields struct {
	Hit
	Owner string
	// Key orders executions (newest first is descending Key) and is what
	// Query.Since compares with TimeKey: TimeKey(executed_at) plus a slot
	// from the execution id. Two executions may share a Key; the later
	// recorded takes the next free one (Key+1, …), as the index does.
	Key int64
	// Tool, EndReason and Sandbox are the entry's tool, end_reason and
	// usage.sandbox ("" when not recorded); DeniedHosts are the distinct
	// hosts its network audit shows refused, in audit order.
	Tool, EndReason, Sandbox string
	DeniedHosts              []string
	// Text is every searchable text of the entry: its code, output
	// (stdout, stderr, error message) and the filter tokens of its status,
	// language and owner.
	Text []string
}

// FieldsOf returns the Fields of e as the index would record them after e
// went through its JSONL line (strings made valid UTF-8 as encoding/json
// does). ok is false for an entry the index would skip (no execution id).
func FieldsOf(e execlog.Entry) (Fields, bool) {
	e.Type = "execution"
	b, err := json.Marshal(e)
	if err != nil {
		return Fields{}, false
	}
	var l line
	if json.Unmarshal(b, &l) != nil || l.ExecutionID == "" {
		return Fields{}, false
	}
	return l.fields(), true
}

// fields are the Fields of an execution line whose language is known.
func (l line) fields() Fields {
	status := SearchStatus(l.Status, l.TimedOut, l.ExitCode)
	h := Hit{ExecutionID: l.ExecutionID, SessionID: l.SessionID, Language: l.Language, CodePreview: preview(l.Code),
		Status: status, ExitCode: l.ExitCode, ErrorPreview: errorPreview(l, status), DurationMs: l.DurationMs,
		ExecutedAt: time.UnixMilli(l.when().UnixMilli()).UTC()}
	var sandbox string
	if l.Usage != nil {
		sandbox = l.Usage.Sandbox
	}
	return Fields{Hit: h, Owner: owner(l.Owner), Key: TimeKey(l.when()) + int64(fnv32(l.ExecutionID)%ridSlots),
		Tool: l.Tool, EndReason: l.EndReason, Sandbox: sandbox, DeniedHosts: l.deniedHosts(),
		Text: []string{l.Code, l.Stdout + "\n" + l.Stderr + "\n" + l.ErrorMessage,
			metaToken("status", status) + " " + metaToken("lang", l.Language) + toolToken(l.Tool) + ownerTokens(l.Owner) +
				l.networkTokens()}}
}

// toolToken is the filter token of a tool (none for an entry without).
func toolToken(tool string) string {
	if tool == "" {
		return ""
	}
	return " " + metaToken("tool", tool)
}

// networkTokens are the filter tokens of the hosts in l's network audit
// (Query.Host, Query.DeniedHost), each once.
func (l line) networkTokens() string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, n := range l.Network {
		t := HostToken(n.Host, !n.Allowed)
		if !seen[t] {
			seen[t] = true
			b.WriteString(" " + t)
		}
	}
	return b.String()
}

// deniedHosts are the distinct hosts l's network audit refused.
func (l line) deniedHosts() []string {
	var out []string
	for _, n := range l.Network {
		if !n.Allowed && !slices.Contains(out, n.Host) {
			out = append(out, n.Host)
		}
	}
	return out
}

// HostToken is the filter token of a host in a run's network audit:
// reached (allowed) or denied. Host names hold characters the full-text
// tokenizers split on, so the token carries a hash of the name instead.
func HostToken(host string, denied bool) string {
	kind := "net"
	if denied {
		kind = "deny"
	}
	h := fnv.New64a()
	h.Write([]byte(strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))))
	return metaToken(kind, fmt.Sprintf("%016x", h.Sum64()))
}

// hostTokens are the filter tokens q asks for.
func (q Query) hostTokens() []string {
	var out []string
	if q.Host != "" {
		out = append(out, HostToken(q.Host, false))
	}
	if q.DeniedHost != "" {
		out = append(out, HostToken(q.DeniedHost, true))
	}
	return out
}

// AsLogged completes an entry read back from a store as Get returns it:
// executed_at from a session line's "at", the language the store recorded,
// and a status derived for lines that carry none.
func AsLogged(e execlog.Entry, language string) execlog.Entry {
	if e.ExecutedAt.IsZero() && e.At != nil {
		e.ExecutedAt = *e.At
	}
	e.Language = language
	e.Status = statusOrDerived(e)
	return e
}

// ValidateQuery checks q as Search does: ErrInvalidQuery for an unknown
// status or text without searchable words.
func ValidateQuery(q Query) error {
	_, _, _, err := q.where(owner(""))
	return err
}

// PageSize is the page size of q: 20 by default, at most MaxLimit.
func (q Query) PageSize() int {
	if q.Limit <= 0 {
		return 20
	}
	return min(q.Limit, MaxLimit)
}

// RetentionCutoffs are, for ApplyRetention at now, the instants before
// which one-shot executions expire: success for successful ones, failure
// for the rest. Only whole UTC days are expired (the daily files'
// granularity: a day is pruned once all of it is past the shorter period),
// so each cutoff is also bounded by the start of the day containing the
// older of the two.
func RetentionCutoffs(now time.Time, r Retention) (success, failure, days time.Time) {
	oldest := now.AddDate(0, 0, -min(r.Success, r.Failure))
	days = oldest.Add(-time.Nanosecond).UTC().Truncate(24 * time.Hour)
	return now.AddDate(0, 0, -r.Success), now.AddDate(0, 0, -r.Failure), days
}

// HostTokens are the filter tokens of q's host filters, for a store that
// records Fields.Text as words.
func HostTokens(q Query) []string { return q.hostTokens() }
