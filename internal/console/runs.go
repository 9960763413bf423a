package console

import (
	"cmp"
	"errors"
	"math"
	"net/http"

	"github.com/codexec/codexec/internal/logindex"
	"github.com/codexec/codexec/internal/runs"
	"github.com/codexec/codexec/internal/tenant"
)

// runListMax bounds the runs page.
const runListMax = 200

// tailBytes is how much of a run's output its page shows (the end).
const tailBytes = 8 << 10

// refreshSeconds is how often a running run's page reloads itself.
const refreshSeconds = 2

// runsData is the background runs page's content.
type runsData struct {
	Rows      []runs.Owned
	Available bool
}

func (c *Console) runList(w http.ResponseWriter, r *http.Request) {
	v := viewer(r)
	d := runsData{Available: c.opts.Runs != nil}
	switch {
	case !d.Available:
	case v.Operator:
		d.Rows = c.opts.Runs.ListAll(runListMax)
	default:
		for _, s := range c.opts.Runs.List(r.Context(), "", runListMax) {
			d.Rows = append(d.Rows, runs.Owned{Owner: v.Principal, Summary: s})
		}
	}
	c.render(w, http.StatusOK, "runs", page{Title: "Background runs", Viewer: v, Nav: "runs", Data: d})
}

// runData is one background run's page.
type runData struct {
	View             runs.View
	Owner            string
	StdoutTail       string
	StderrTail       string
	Running          bool
	RefreshSeconds   int
	StdoutCut        bool
	StderrCut        bool
	HistoryAvailable bool
}

func (c *Console) run(w http.ResponseWriter, r *http.Request) {
	v, id := viewer(r), r.PathValue("id")
	if c.opts.Runs == nil {
		c.fail(w, r, http.StatusNotFound, "Background runs are not available here.", nil)
		return
	}
	d, err := c.runTail(r, id, c.runOwner(r, v, id))
	if errors.Is(err, runs.ErrNotFound) {
		c.fail(w, r, http.StatusNotFound, "No background run "+id+" of yours.", nil)
		return
	}
	if err != nil {
		c.fail(w, r, http.StatusServiceUnavailable, "The run could not be read right now.", err)
		return
	}
	c.render(w, http.StatusOK, "run", page{Title: "Run " + id, Viewer: v, Nav: "runs", Data: d})
}

// runOwner is whose run id is read as: the viewer's own, or for an
// operator its owner's, held here or recorded in the history (a run that
// ended before this server started).
func (c *Console) runOwner(r *http.Request, v Viewer, id string) string {
	if !v.Operator {
		return v.Principal
	}
	if o, ok := c.opts.Runs.OwnerOf(id); ok {
		return o
	}
	if e, err := c.opts.History.Inspect(r.Context(), id, logindex.Scope{All: true}); err == nil {
		return cmp.Or(e.Owner, tenant.Local)
	}
	return v.Principal
}

// runTail reads run id as its owner would, keeping the last tailBytes of
// each stream: one read finds where the output ends, one reads its end.
func (c *Console) runTail(r *http.Request, id, owner string) (runData, error) {
	ctx := ownerCtx(r.Context(), owner)
	end, err := c.opts.Runs.Get(ctx, id, runs.Read{StdoutOffset: math.MaxInt64, StderrOffset: math.MaxInt64})
	if err != nil {
		return runData{}, err
	}
	rd := runs.Read{StdoutOffset: max(0, end.NextStdoutOffset-tailBytes), StderrOffset: max(0, end.NextStderrOffset-tailBytes)}
	view, err := c.opts.Runs.Get(ctx, id, rd)
	if err != nil {
		return runData{}, err
	}
	return runData{View: view, Owner: owner, StdoutTail: view.Stdout, StderrTail: view.Stderr,
		Running: view.Status == runs.StatusRunning, RefreshSeconds: refreshSeconds,
		StdoutCut: rd.StdoutOffset > 0, StderrCut: rd.StderrOffset > 0}, nil
}
