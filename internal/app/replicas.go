package app

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net"
	"net/http"
	"os"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/httpserve"
	"github.com/codexec/codexec/internal/replicas"
	"github.com/codexec/codexec/internal/sessionreg"
)

// buildReplicas makes this server one replica of those sharing the
// PostgreSQL store's session registry, when it serves HTTP on such a store
// (config.Replicated); otherwise a.replicas stays nil and the server is
// alone, as with the embedded store.
func (a *App) buildReplicas(cfg config.Config) {
	if !cfg.Replicated() || a.store == nil {
		return
	}
	id := cfg.Replica.ID
	if id == "" {
		id = defaultReplicaID()
	}
	a.replicas = replicas.New(replicas.Options{Self: sessionreg.Replica{ID: id, Addr: cfg.Replica.Addr},
		Registry: a.store.Registry(), Secret: cfg.Replica.Secret, Lease: cfg.Replica.Lease})
}

// defaultReplicaID is the host name (a pod's name on Kubernetes) plus a
// random suffix, so two replicas on one host, or a restarted one, never
// share an id.
func defaultReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "codexec"
	}
	return host + "-" + rand.Text()[:6]
}

// wireReplica adds a replica's parts to o: the hop route, the first
// heartbeat once the address is known, the heartbeat loop, and, after the
// drain, its sessions paused (when replicas share paused sessions) and
// those left marked lost. Alone, it does nothing.
func (a *App) wireReplica(ctx context.Context, cfg config.Config, o *httpserve.Options) {
	set := a.replicas
	if set == nil {
		return
	}
	maxBody := int64(stdioMaxLine(cfg))
	o.Routes = map[string]http.Handler{replicas.HopPath: set.Handler(a.Server.ForwardedHandler(maxBody), maxBody)}
	beatCtx, stopBeat := context.WithCancel(context.WithoutCancel(ctx))
	listening := o.Listening
	o.Listening = func(addr net.Addr) {
		if listening != nil {
			listening(addr)
		}
		scheme := "http://"
		if cfg.Remote.TLSCert != "" {
			scheme = "https://"
		}
		set.SetAddr(scheme + addr.String())
		if err := set.Start(beatCtx); err != nil {
			slog.Error("session registry unreachable: this replica retries every third of the lease", "err", err)
		}
		go set.Run(beatCtx)
	}
	drain := o.Drain
	shared := a.sharesPaused(cfg)
	o.Drain = func(ctx context.Context) int {
		n := drain(ctx)
		if shared {
			// Before the registry marks what is left lost: a paused
			// session is no replica's, and the next call for it, at any
			// replica, resumes it there.
			p, failed := a.sessions.PauseAll()
			slog.Info("drain: sessions paused for the other replicas", "paused", p, "not_paused", failed)
		}
		stopBeat()
		set.Stop()
		return n
	}
}
