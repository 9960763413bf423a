package app

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/egress"
)

// buildEgress makes the egress service once from cfg: nil (egress off: no
// run has network) without a ceiling. The credentials file is loaded and
// checked now, so a bad one refuses the start with the setting named; the
// interception CA and the files placed in sandboxes live under the data
// directory.
func buildEgress(cfg config.Config) (*egress.Service, error) {
	ec, err := egressConfig(cfg)
	if err != nil {
		return nil, err
	}
	svc, err := egress.New(ec)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	return svc, nil
}

// egressConfig is cfg's egress settings as package egress takes them.
func egressConfig(cfg config.Config) (egress.Config, error) {
	e := cfg.Egress
	ec := egress.Config{Ceiling: egress.Policy{Allow: e.Allow}, DefaultCeiling: e.Default == config.EgressDefaultCeiling,
		Pins: e.Pins, CAFile: e.CAFile, StateDir: filepath.Join(cfg.DataDir, "egress")}
	if len(e.Principals) > 0 {
		ec.Principals = map[string]egress.Policy{}
		for p, rules := range e.Principals {
			ec.Principals[p] = egress.Policy{Allow: rules}
		}
	}
	if e.Credentials != "" {
		creds, err := egress.LoadCredentials(e.Credentials)
		if err != nil {
			return egress.Config{}, fmt.Errorf("CODEXEC_EGRESS_CREDENTIALS %s: %w", e.Credentials, err)
		}
		ec.Credentials = creds
	}
	return ec, nil
}

// doctorEgress prints the network configuration: the ceiling, the
// default, how many pins and credentials (never their values), the extra
// CA file, and in a mode without isolation that runs have the host's
// network whatever it says.
func doctorEgress(cfg config.Config, w io.Writer, hostNetwork bool) {
	e := cfg.Egress
	if len(e.Allow) == 0 {
		fmt.Fprintln(w, "egress: off (CODEXEC_EGRESS_ALLOW is empty): runs in namespace and docker mode have no network")
	} else {
		fmt.Fprintf(w, "egress: ceiling %s; runs without a network argument get %s; %d principal ceiling(s), %d pin(s)\n",
			egress.Policy{Allow: e.Allow}, e.Default, len(e.Principals), len(e.Pins))
		doctorEgressFiles(cfg, w)
	}
	if hostNetwork {
		fmt.Fprintln(w, "egress: WARNING: subprocess mode: every run has the HOST's network; CODEXEC_EGRESS_ALLOW and network.allow filter nothing there")
	}
}

// doctorEgressFiles checks the credentials and CA files as the start does.
func doctorEgressFiles(cfg config.Config, w io.Writer) {
	if ec, err := egressConfig(cfg); err != nil {
		fmt.Fprintf(w, "egress: ERROR: %v\n", err)
	} else if ec.Credentials != nil {
		fmt.Fprintf(w, "egress: %d credential(s) from %s (values not shown)\n", len(ec.Credentials), cfg.Egress.Credentials)
	}
	if cfg.Egress.CAFile != "" {
		fmt.Fprintf(w, "egress: extra CAs for upstream TLS from %s\n", cfg.Egress.CAFile)
	}
}
