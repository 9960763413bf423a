package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/logindex"
)

// statuses are the history's search statuses, the filter's choices and the
// chart's series, in the chart's stacking order.
var statuses = []string{"success", "failed", "timeout", "cancelled", "lost"}

// overviewWindow is the span the overview summarises.
const overviewWindow = 24 * time.Hour

// overviewData is the overview page's content.
type overviewData struct {
	Overview logindex.Overview
	Chart    chart
	WarmRate string
	Since    time.Time
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	v := viewer(r)
	now := time.Now()
	win := logindex.Window{Scope: c.scope(v, ""), Since: now.Add(-overviewWindow).Truncate(time.Hour), Until: now, Bucket: time.Hour}
	ov, err := c.opts.History.Overview(r.Context(), win)
	if err != nil {
		c.historyFail(w, r, err)
		return
	}
	d := overviewData{Overview: ov, Chart: newChart(ov.Buckets), WarmRate: warmRate(ov.Sandboxes), Since: win.Since}
	c.render(w, http.StatusOK, "overview", page{Title: "Overview", Viewer: v, Nav: "overview", Data: d})
}

// warmRate is the share of runs whose sandbox was ready (warm or forked),
// among those that recorded how they got one.
func warmRate(by map[string]int) string {
	total := 0
	for _, n := range by {
		total += n
	}
	if total == 0 {
		return "no runs"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(by["warm"]+by["forked"])/float64(total))
}

// scope is whose data v asks for: an operator everyone's (or one
// principal's, when named), anyone else only its own.
func (c *Console) scope(v Viewer, principal string) logindex.Scope {
	if v.Operator {
		return logindex.Scope{All: true, Owner: principal}
	}
	return logindex.Scope{Owner: v.Principal}
}

// historyFail answers a failed history read: a bad filter is the user's
// to fix (400, said why), the rest is unavailable (503).
func (c *Console) historyFail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, logindex.ErrInvalidQuery) {
		c.fail(w, r, http.StatusBadRequest, "The search could not be run: "+err.Error(), err)
		return
	}
	c.fail(w, r, http.StatusServiceUnavailable, "The execution history is not available right now; try again shortly.", err)
}

// historyData is the history page's content.
type historyData struct {
	Form     url.Values
	Statuses []string
	// Values are the languages and tools to choose from (nil: the store
	// cannot list them, and they are typed).
	Values *logindex.Values
	Page   logindex.Page
	// CountCap is the largest total counted (more reads "more than").
	CountCap int
	NextURL  string
	Error    string
}

func (c *Console) history(w http.ResponseWriter, r *http.Request) {
	v := viewer(r)
	q := r.URL.Query()
	f, err := filterOf(q)
	d := historyData{Form: q, Statuses: statuses, CountCap: logindex.BrowseCountCap, Values: c.values(r, c.scope(v, q.Get("principal")))}
	if err != nil {
		d.Error = err.Error()
		c.render(w, http.StatusBadRequest, "history", page{Title: "History", Viewer: v, Nav: "history", Data: d})
		return
	}
	f.Scope = c.scope(v, q.Get("principal"))
	d.Page, err = c.opts.History.Browse(r.Context(), f)
	if err != nil {
		c.historyFail(w, r, err)
		return
	}
	if d.Page.Next != "" {
		next := cloneValues(q)
		next.Set("cursor", d.Page.Next)
		d.NextURL = Prefix + "/history?" + next.Encode()
	}
	c.render(w, http.StatusOK, "history", page{Title: "History", Viewer: v, Nav: "history", Data: d})
}

// values are the languages and tools scope's executions used, for the
// filters' choices; nil when the store cannot list them or fails to.
func (c *Console) values(r *http.Request, scope logindex.Scope) *logindex.Values {
	vl, ok := c.opts.History.(logindex.ValueLister)
	if !ok {
		return nil
	}
	v, err := vl.Values(r.Context(), scope)
	if err != nil {
		return nil
	}
	return &v
}

// filterOf reads the history's filters from a query string.
func filterOf(q url.Values) (logindex.Filter, error) {
	f := logindex.Filter{Tool: q.Get("tool"), SessionID: q.Get("session"), Cursor: q.Get("cursor")}
	f.Query = logindex.Query{Text: q.Get("q"), Language: q.Get("language"), Status: q.Get("status")}
	var err error
	if f.Since, err = parseWhen(q.Get("since")); err != nil {
		return f, fmt.Errorf("since: %w", err)
	}
	if f.Until, err = parseWhen(q.Get("until")); err != nil {
		return f, fmt.Errorf("until: %w", err)
	}
	return f, nil
}

// whenLayouts are the date forms the filters take: a date input's, a
// datetime-local input's, and RFC 3339.
var whenLayouts = []string{"2006-01-02", "2006-01-02T15:04", time.RFC3339}

// parseWhen reads a filter's time, in UTC unless it says otherwise.
func parseWhen(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	for _, l := range whenLayouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date (YYYY-MM-DD, YYYY-MM-DDTHH:MM or RFC 3339)", s)
}

func cloneValues(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// chart is the overview's runs-per-hour bar chart, drawn as SVG by the
// template from these numbers.
type chart struct {
	Width, Height int
	Bars          []bar
	Max           int
	Legend        []string
}

// bar is one bucket: its stacked segments, bottom first.
type bar struct {
	X     int
	Label string
	Total int
	Segs  []seg
}

// seg is one status's part of a bar.
type seg struct {
	Status      string
	Count       int
	Y, H        int
	Title       string
	StatusClass string
}

const (
	chartBarWidth = 24
	chartGap      = 6
	chartHeight   = 160
)

// newChart lays out the buckets' bars, scaled to the busiest bucket.
func newChart(buckets []logindex.Bucket) chart {
	ch := chart{Height: chartHeight, Width: max(len(buckets)*(chartBarWidth+chartGap), 1), Legend: statuses}
	for _, b := range buckets {
		ch.Max = max(ch.Max, total(b.ByStatus))
	}
	for i, b := range buckets {
		ch.Bars = append(ch.Bars, layoutBar(b, i, ch.Max))
	}
	return ch
}

func total(by map[string]int) int {
	n := 0
	for _, c := range by {
		n += c
	}
	return n
}

// layoutBar stacks b's statuses (known ones in order, then others by
// name) from the chart's bottom.
func layoutBar(b logindex.Bucket, i, maxTotal int) bar {
	out := bar{X: i * (chartBarWidth + chartGap), Label: b.Start.UTC().Format("15:04"), Total: total(b.ByStatus)}
	y := chartHeight
	for _, st := range orderStatuses(b.ByStatus) {
		n := b.ByStatus[st]
		h := n * chartHeight / max(maxTotal, 1)
		if n > 0 && h == 0 {
			h = 1
		}
		y -= h
		out.Segs = append(out.Segs, seg{Status: st, Count: n, Y: y, H: h, StatusClass: statusClass(st),
			Title: fmt.Sprintf("%s: %d %s", b.Start.UTC().Format("2006-01-02 15:04"), n, st)})
	}
	return out
}

// orderStatuses is by's statuses with runs: known ones first, in order.
func orderStatuses(by map[string]int) []string {
	var out, other []string
	for _, st := range statuses {
		if by[st] > 0 {
			out = append(out, st)
		}
	}
	for st, n := range by {
		if n > 0 && !contains(statuses, st) {
			other = append(other, st)
		}
	}
	sort.Strings(other)
	return append(out, other...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// statusClass is the CSS class of a status: known ones by name, any other
// as "other" (a status never becomes markup of its own).
func statusClass(st string) string {
	if contains(statuses, st) {
		return "st-" + st
	}
	return "st-other"
}
