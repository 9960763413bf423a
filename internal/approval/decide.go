package approval

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/codexec/codexec/internal/shell"
)

// Call is what one tool call would run, as the gate judges and shows it.
// mcpserver fills it from the call's arguments (and, for run_script, the
// saved script's code).
type Call struct {
	Tool     string
	Language string
	// Code is the program text (execute_code, run_code, send_to_session,
	// run_script's saved script).
	Code string
	// Command is execute_command's bash command line.
	Command string
	// Program and Args are execute_process's (Args also run_script's argv).
	Program string
	Args    []string
	// Package is install_package's package specification.
	Package string
	// Script is run_script's script name; Session the session or context
	// the code runs in.
	Script  string
	Session string
	// Upstream and Intent are code mode's: the upstream MCP tools the code
	// may call, and the task it was given.
	Upstream []string
	Intent   string
	// Network is the destinations the call asks for (network.allow).
	Network    []string
	WorkingDir string
}

// gated are the tools that run code or programs, and whether each is
// gated only when it asks for network (start_session and create_context
// start an interpreter but run no caller code until the next call, which
// is gated itself).
var gated = map[string]bool{
	"execute_code": false, "run_code": false, "send_to_session": false, "run_script": false,
	"execute_command": false, "execute_process": false, "install_package": false,
	"start_session": true, "create_context": true,
}

// Gated reports whether calls of the named tool may need approval.
func Gated(tool string) bool {
	_, ok := gated[tool]
	return ok
}

func gatedNames() []string {
	names := make([]string, 0, len(gated))
	for n := range gated {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Policy decides which calls need approval. Build it with NewPolicy; it
// is immutable and safe for concurrent use.
type Policy struct {
	mode         Mode
	commands     *shell.Allowlist // nil: every command is risky
	installRisky bool
	networkRisky bool
	patterns     []*regexp.Regexp
	tools        map[string]string
}

// NewPolicy builds the policy of mode with the operator's rules (used in
// the risky mode; their zero value keeps every default). pathEnv is the
// PATH commands run with, so an absolute spelling of an allowed name is
// recognised as the shell tools do.
func NewPolicy(mode Mode, r Rules, pathEnv string) (*Policy, error) {
	pats, err := compilePatterns(r.CodePatterns)
	if err != nil {
		return nil, err
	}
	p := &Policy{mode: mode, installRisky: r.InstallPackage == nil || *r.InstallPackage,
		networkRisky: r.Network == nil || *r.Network, patterns: pats, tools: r.Tools}
	if len(r.Commands) > 0 {
		p.commands = shell.NewAllowlist(r.Commands, pathEnv)
	}
	return p, nil
}

// Mode is the policy's mode.
func (p *Policy) Mode() Mode { return p.mode }

// Decide says whether c needs a person's approval, and why (in words the
// question and the log show).
func (p *Policy) Decide(c Call) (needed bool, reasons []string) {
	if p == nil || p.mode == Off {
		return false, nil
	}
	networkOnly, ok := gated[c.Tool]
	if !ok || (networkOnly && len(c.Network) == 0) {
		return false, nil
	}
	switch p.tools[c.Tool] {
	case "always":
		return true, []string{"the operator's rules ask about every " + c.Tool + " call"}
	case "never":
		return false, nil
	}
	if p.mode == Always {
		return true, []string{"the operator asks about every call that runs code or a program"}
	}
	reasons = p.risks(c)
	return len(reasons) > 0, reasons
}

// risks lists what the rules find risky in c.
func (p *Policy) risks(c Call) []string {
	var out []string
	if p.networkRisky && len(c.Network) > 0 {
		out = append(out, "it asks for network: "+strings.Join(c.Network, ", "))
	}
	if c.Tool == "install_package" && p.installRisky {
		out = append(out, "it installs a package")
	}
	if r := p.commandRisk(c); r != "" {
		out = append(out, r)
	}
	for _, re := range p.patterns {
		if c.Code != "" && re.MatchString(c.Code) {
			out = append(out, fmt.Sprintf("the code matches the pattern %q", re.String()))
		}
	}
	return out
}

// commandRisk says why a command line or program is risky ("" if not).
func (p *Policy) commandRisk(c Call) string {
	var err error
	switch c.Tool {
	case "execute_command":
		if p.commands == nil {
			return "it runs a shell command and the rules name no command that needs no approval"
		}
		err = p.commands.CheckScript(c.Command)
	case "execute_process":
		if p.commands == nil {
			return "it runs a program and the rules name no command that needs no approval"
		}
		err = p.commands.Allowed(c.Program)
	default:
		return ""
	}
	if err != nil {
		return "it runs a command outside the rules' list of commands that need no approval (" + err.Error() + ")"
	}
	return ""
}
