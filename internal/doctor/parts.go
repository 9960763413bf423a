package doctor

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/egress"
)

// checkDisks tries one bounded disk and reports whether the disk limit
// covers workspaces.
func checkDisks(cfg config.Config, w io.Writer) {
	inodes, err := app.ProbeDisks(cfg)
	if err != nil {
		fmt.Fprintf(w, "disk limit: WORKSPACE UNBOUNDED in namespace/docker modes (only /tmp, a tmpfs, is limited): %v\n", err)
		return
	}
	fmt.Fprintf(w, "disk limit: %d MiB and %d inodes per run or session, workspace and /tmp together (loop-mounted ext4); subprocess mode: file size only\n",
		cfg.DiskLimitBytes>>20, inodes)
}

// printEgress prints the network configuration: the ceiling, the
// default, how many pins and credentials (never their values), the extra
// CA file, and in a mode without isolation that runs have the host's
// network whatever it says.
func printEgress(cfg config.Config, w io.Writer, hostNetwork bool) {
	e := cfg.Egress
	if len(e.Allow) == 0 {
		fmt.Fprintln(w, "egress: off (CODEXEC_EGRESS_ALLOW is empty): runs in namespace and docker mode have no network")
	} else {
		fmt.Fprintf(w, "egress: ceiling %s; runs without a network argument get %s; %d principal ceiling(s), %d pin(s)\n",
			egress.Policy{Allow: e.Allow}, e.Default, len(e.Principals), len(e.Pins))
		printEgressFiles(cfg, w)
	}
	if hostNetwork {
		fmt.Fprintln(w, "egress: WARNING: subprocess mode: every run has the HOST's network; CODEXEC_EGRESS_ALLOW and network.allow filter nothing there")
	}
}

// printEgressFiles checks the credentials and CA files as the start does.
func printEgressFiles(cfg config.Config, w io.Writer) {
	if ec, err := app.EgressConfig(cfg); err != nil {
		fmt.Fprintf(w, "egress: ERROR: %v\n", err)
	} else if ec.Credentials != nil {
		fmt.Fprintf(w, "egress: %d credential(s) from %s (values not shown)\n", len(ec.Credentials), cfg.Egress.Credentials)
	}
	if cfg.Egress.CAFile != "" {
		fmt.Fprintf(w, "egress: extra CAs for upstream TLS from %s\n", cfg.Egress.CAFile)
	}
}

// checkUpstreams connects to every configured upstream and prints its
// state. Upstream problems are reported, never fatal.
func checkUpstreams(ctx context.Context, cfg config.Config, env app.HostEnv, w io.Writer) {
	m, err := app.NewUpstreams(cfg, env)
	if err != nil {
		fmt.Fprintf(w, "upstreams: ERROR: %v\n", err)
		return
	}
	if m == nil {
		fmt.Fprintln(w, "upstreams: none configured (CODEXEC_UPSTREAMS)")
		return
	}
	defer m.Close()
	m.Start()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	m.Wait(ctx)
	for _, s := range m.States() {
		line := fmt.Sprintf("upstream %s (%s): %s, %d tools", s.Name, s.Transport, s.Status, s.Tools)
		if s.Error != "" {
			line += ": " + strings.ReplaceAll(s.Error, "\n", " ")
		}
		fmt.Fprintln(w, line)
	}
}
