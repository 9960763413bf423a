package config

import (
	"errors"
	"time"
)

// Approval holds the settings of the approval gate (package approval):
// which calls a person must approve through the client before they run.
type Approval struct {
	// Mode is ApprovalOff, ApprovalRisky or ApprovalAlways.
	Mode string
	// Rules is the path of the rules file (YAML or JSON) saying what is
	// risky; loaded and checked at start by the app. Empty: the defaults.
	Rules string
	// Timeout is how long a question waits for the person's answer.
	Timeout time.Duration
	// KeyFile holds the key that signs the questions' request states;
	// empty: a random key per process. Replicas behind one URL must share
	// one, since a client's answer may reach another replica.
	KeyFile string
}

// Values of CODEXEC_APPROVAL.
const (
	ApprovalOff    = "off"
	ApprovalRisky  = "risky"
	ApprovalAlways = "always"
)

func init() {
	settings = append(settings, approvalSettings...)
}

var approvalSettings = []setting{
	{"CODEXEC_APPROVAL", ApprovalOff, "ask a person, through the client (MCP elicitation), to approve calls before they run: off | risky (the calls CODEXEC_APPROVAL_RULES calls risky) | always (every call that runs code or a program); a declined, unanswered or unaskable call runs nothing (docs/approval.md)", oneOf(func(c *Config) *string { return &c.Approval.Mode }, ApprovalOff, ApprovalRisky, ApprovalAlways)},
	{"CODEXEC_APPROVAL_RULES", "", "YAML or JSON file of what is risky: commands (needing no approval), install_package, network, code_patterns, tools (unset: every command, install and network request is risky)", str(func(c *Config) *string { return &c.Approval.Rules })},
	{"CODEXEC_APPROVAL_TIMEOUT", "5m", "how long a question waits for the person's answer; later answers are refused (e.g. 5m, 90s)", duration(func(c *Config) *time.Duration { return &c.Approval.Timeout })},
	{"CODEXEC_APPROVAL_KEY_FILE", "", "file holding the key (32+ bytes) that signs approval questions' request states; replicas behind one URL must share it (unset: a random key per process)", str(func(c *Config) *string { return &c.Approval.KeyFile })},
}

// validateApproval checks the gate's settings that need no file read.
func (c *Config) validateApproval() error {
	if c.Approval.Timeout < time.Second {
		return errors.New("CODEXEC_APPROVAL_TIMEOUT must be at least 1s: a person needs time to read the question")
	}
	if c.Approval.Mode == ApprovalOff && c.Approval.Rules != "" {
		c.warn("CODEXEC_APPROVAL_RULES is set but CODEXEC_APPROVAL is off: nobody is asked; set CODEXEC_APPROVAL=risky to use the rules")
	}
	return nil
}
