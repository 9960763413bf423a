package main

import (
	"fmt"
	"io"

	"github.com/codexec/codexec/internal/config"
)

// command is one subcommand as help lists it.
type command struct{ name, summary string }

// commands are the subcommands run dispatches, in help order.
var commands = []command{
	{"serve", "serve MCP over stdio, or Streamable HTTP with --http (the default when no command is given)"},
	{"doctor", "report which sandbox modes work on this host and why not; --repair-acls removes ACL grants earlier versions left; --print-dockerfile prints docker mode's Dockerfile.sandbox"},
	{"console", "serve the web console (history, runs, files, overview) over this data directory and store on loopback, read-only, for people who run codexec over stdio; prints a one-time login URL on stderr; -addr HOST:PORT (default 127.0.0.1:0)"},
	{"env", "show every setting's effective value and where it came from (flag, env or default); takes the same flags"},
	{"version", "print the version, commit and commit date (also --version)"},
	{"help", "print this help (also -h, --help)"},
}

const description = `codexec is a Model Context Protocol (MCP) server that runs code for AI agents in a sandbox: one-shot
runs of python, node/javascript, typescript and bash, persistent interpreter sessions, a script library, package
installation, searchable execution logs and allow-listed shell commands. It speaks MCP on stdin/stdout (or
Streamable HTTP with --http) and logs to stderr. Every setting is a flag or the environment variable beside it;
a flag wins over the variable.`

// printHelp writes the description, the commands and every flag with its
// type, environment variable and default.
func printHelp(w io.Writer) {
	fmt.Fprintf(w, "%s\n\nUsage:\n  codexec [command] [flags]\n\nCommands:\n", description)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	printFlags(w)
}

// printFlags lists every flag: flag, type, environment variable and default
// on one line, what it does on the next.
func printFlags(w io.Writer) {
	fmt.Fprintln(w, "\nFlags:")
	for _, f := range config.Flags() {
		def := f.Default
		if def == "" {
			def = "unset"
		}
		fmt.Fprintf(w, "  --%s %s  (%s, default %s)\n      %s\n", f.Name, f.Type, f.Env, def, f.Help)
	}
	fmt.Fprintf(w, "  --%s string\n      alias of --%s\n", config.HTTPAlias, config.FlagName("CODEXEC_HTTP_ADDR"))
	fmt.Fprintf(w, "  %s\n      doctor only: remove the ACL grants earlier versions left\n", repairACLsFlag)
	fmt.Fprintf(w, "  %s HOST:PORT\n      console only: the loopback address to serve the console on (default %s)\n", consoleAddrFlag, defaultConsoleAddr)
	fmt.Fprintf(w, "  %s\n      doctor only: print Dockerfile.sandbox, which builds docker mode's image, and exit\n", printDockerfileFlag)
}
