package app

import (
	"fmt"

	"github.com/codexec/codexec/internal/approval"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/mcpserver"
)

// buildApproval makes the approval gate the settings ask for (nil when
// CODEXEC_APPROVAL is off): its rules file and signing key are read here,
// so a bad one stops the start with an error naming the setting.
func buildApproval(cfg config.Config, pathEnv string) (*mcpserver.Approval, error) {
	mode, err := approval.ParseMode(cfg.Approval.Mode)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_APPROVAL: %w", err)
	}
	if mode == approval.Off {
		return nil, nil
	}
	var rules approval.Rules
	if path := cfg.Approval.Rules; path != "" {
		if rules, err = approval.LoadRules(path); err != nil {
			return nil, fmt.Errorf("CODEXEC_APPROVAL_RULES: %w", err)
		}
	}
	policy, err := approval.NewPolicy(mode, rules, pathEnv)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_APPROVAL_RULES: %w", err)
	}
	key, err := approvalKey(cfg.Approval.KeyFile)
	if err != nil {
		return nil, err
	}
	signer, err := approval.NewSigner(key, cfg.Approval.Timeout)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_APPROVAL_KEY_FILE: %w", err)
	}
	return &mcpserver.Approval{Policy: policy, Signer: signer, Timeout: cfg.Approval.Timeout}, nil
}

// approvalKey reads the key file, or makes this process's own key.
func approvalKey(path string) ([]byte, error) {
	if path == "" {
		return approval.NewKey()
	}
	k, err := approval.LoadKey(path)
	if err != nil {
		return nil, fmt.Errorf("CODEXEC_APPROVAL_KEY_FILE: %w", err)
	}
	return k, nil
}
