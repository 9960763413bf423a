package console

import (
	"errors"
	"net/http"

	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// sessionRow is one session or context on the sessions page.
type sessionRow struct {
	session.Info
	Owner string
	// Mine: the viewer owns it, so it may close or pause it.
	Mine         bool
	Checkpointed bool
}

// sessionsData is the sessions page's content.
type sessionsData struct {
	Rows []sessionRow
	// Available: this console has the session manager (codexec console,
	// reading another server's directory, does not).
	Available bool
	// Actions: sessions can be closed here (not read-only); CanPause:
	// paused too (checkpoints on).
	Actions, CanPause bool
}

func (c *Console) sessions(w http.ResponseWriter, r *http.Request) {
	v := viewer(r)
	d := sessionsData{Available: c.opts.Sessions != nil, Actions: !c.opts.ReadOnly}
	if d.Available {
		d.Rows = c.sessionRows(r, v)
		d.CanPause = d.Actions && c.opts.Sessions.CheckpointsEnabled()
	}
	c.render(w, http.StatusOK, "sessions", page{Title: "Sessions", Viewer: v, Nav: "sessions", Data: d})
}

// sessionRows are the sessions v sees: its own, or everyone's for an
// operator.
func (c *Console) sessionRows(r *http.Request, v Viewer) []sessionRow {
	var out []sessionRow
	add := func(owner string, in session.Info) {
		out = append(out, sessionRow{Info: in, Owner: owner, Mine: owner == v.Principal, Checkpointed: in.CheckpointBytes > 0})
	}
	if v.Operator {
		for _, o := range c.opts.Sessions.ListAll() {
			add(o.Owner, o.Info)
		}
		return out
	}
	for _, in := range c.opts.Sessions.List(r.Context()) {
		add(v.Principal, in)
	}
	return out
}

// closeSession closes the viewer's own session (operators too close only
// their own: the console never acts for another principal).
func (c *Console) closeSession(w http.ResponseWriter, r *http.Request) {
	c.sessionAction(w, r, func(id string) error {
		_, err := c.opts.Sessions.Stop(r.Context(), id, "closed", false)
		return err
	})
}

// pauseSession checkpoints the viewer's own session and frees its memory.
func (c *Console) pauseSession(w http.ResponseWriter, r *http.Request) {
	c.sessionAction(w, r, func(id string) error {
		_, err := c.opts.Sessions.Pause(r.Context(), id)
		return err
	})
}

// sessionAction runs act on the session the path names and goes back to
// the sessions page; an unknown or foreign session is 404.
func (c *Console) sessionAction(w http.ResponseWriter, r *http.Request, act func(id string) error) {
	if c.opts.Sessions == nil || c.opts.ReadOnly {
		c.fail(w, r, http.StatusForbidden, "This console only reads: sessions cannot be changed here.", nil)
		return
	}
	id := r.PathValue("id")
	err := act(id)
	switch {
	case errors.Is(err, session.ErrNotFound):
		c.fail(w, r, http.StatusNotFound, "No session "+id+" of yours.", nil)
	case errors.Is(err, sessionckpt.ErrCheckpointsOff):
		c.fail(w, r, http.StatusConflict, "Pausing needs session checkpoints, which this server has off.", nil)
	case err != nil:
		c.fail(w, r, http.StatusConflict, "The session could not be changed: "+err.Error(), err)
	default:
		http.Redirect(w, r, Prefix+"/sessions", http.StatusSeeOther)
	}
}
