package app

import (
	"fmt"
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
	ec, err := EgressConfig(cfg)
	if err != nil {
		return nil, err
	}
	svc, err := egress.New(ec)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	return svc, nil
}

// EgressConfig is cfg's egress settings as package egress takes them.
func EgressConfig(cfg config.Config) (egress.Config, error) {
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
