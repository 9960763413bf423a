// Command codexec is an MCP server that runs code for AI agents in a sandbox.
//
//	codexec [serve] [flags]   serve MCP over stdio (the default)
//	codexec doctor [--repair-acls] [flags]
//	                          report which sandbox modes work on this host and
//	                          ACL grants earlier versions left (and remove them)
//	codexec doctor --print-dockerfile
//	                          print Dockerfile.sandbox, which builds docker
//	                          mode's image
//	codexec console [-addr 127.0.0.1:0] [flags]
//	                          serve the web console over this data directory,
//	                          read-only, on loopback, with a one-time login URL
//	codexec env [flags]       show every setting's effective value and its
//	                          source (flag, env or default)
//	codexec version           print version, commit and commit date
//	codexec help              print the commands and every flag (also -h, --help)
//
// main only parses configuration and wires the packages together; see
// internal/app for the assembly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/codexec/codexec"
	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/doctor"
	"github.com/codexec/codexec/internal/packages"
	"github.com/codexec/codexec/internal/proc"
	"github.com/codexec/codexec/internal/rootless"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	// The hidden verbs the sandboxes re-execute the binary with when
	// codexec-sandbox is not installed next to it (package helper).
	if code, ok := helper.Dispatch(args); ok {
		return code
	}
	if len(args) == 1 && args[0] == rootless.ProbeCommand {
		return rootless.RunProbe()
	}
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if code, done := infoCommand(cmd, args); done {
		return code
	}
	repairACLs := false
	if cmd == "doctor" {
		var printDockerfile bool
		if printDockerfile, args = takeFlag(args, printDockerfileFlag); printDockerfile {
			fmt.Fprint(os.Stdout, codexec.SandboxDockerfile)
			return 0
		}
		repairACLs, args = takeFlag(args, repairACLsFlag)
	}
	consoleAddr := defaultConsoleAddr
	if cmd == "console" {
		var ok bool
		if consoleAddr, args, ok = takeValue(args, consoleAddrFlag, defaultConsoleAddr); !ok {
			fmt.Fprintf(os.Stderr, "codexec: %s needs a value such as %s\n", consoleAddrFlag, defaultConsoleAddr)
			return 2
		}
	}
	home, _ := os.UserHomeDir()
	cfg, settings, err := config.Resolve(args, os.Getenv, home, io.Discard)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(os.Stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "codexec: configuration error: %v\nrun codexec help for the flags and their variables\n", err)
		return 2
	}
	if cmd == "env" {
		printEnv(os.Stdout, settings, cfg.Warnings)
		return 0
	}
	if cmd == "console" {
		return runConsole(cfg, consoleAddr)
	}
	return runServer(cmd, cfg, home, repairACLs)
}

// consoleAddrFlag is codexec console's own flag, not a setting.
const (
	consoleAddrFlag    = "-addr"
	defaultConsoleAddr = "127.0.0.1:0"
)

// runConsole serves the web console until SIGINT or SIGTERM, printing its
// one-time login URL on stderr.
func runConsole(cfg config.Config, addr string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := app.Console(ctx, cfg, app.ConsoleOptions{Addr: addr, Announce: func(url string) {
		fmt.Fprintf(os.Stderr, "console: %s\n", url)
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec:", err)
		return 1
	}
	return 0
}

// infoCommand handles what needs no configuration: help, version and an
// unknown command. done reports whether cmd was one of them.
func infoCommand(cmd string, args []string) (code int, done bool) {
	switch {
	case cmd == "help":
		printHelp(os.Stdout)
		return 0, true
	case cmd == "version" || (cmd == "serve" && len(args) > 0 && (args[0] == "--version" || args[0] == "-version")):
		printVersion(os.Stdout)
		return 0, true
	case !slices.ContainsFunc(commands, func(c command) bool { return c.name == cmd }):
		fmt.Fprintf(os.Stderr, "codexec: unknown command %q; run codexec help for the commands\n", cmd)
		return 2, true
	}
	return 0, false
}

// runServer runs serve or doctor with the host facts read from the process.
func runServer(cmd string, cfg config.Config, home string, repairACLs bool) int {
	env := app.HostEnv{Home: home, Path: os.Getenv("PATH"), Lang: os.Getenv("LANG"), Term: os.Getenv("TERM")}
	env.Cwd, _ = os.Getwd()
	env.Installer = packages.SelectEnv(os.Environ())
	env.Environ = os.Environ()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if path := os.Getenv("CODEXEC_CPU_PROFILE"); path != "" {
		stopProfile := startProfile(path)
		defer stopProfile()
	}
	proc.CloseOnExecInherited()
	if code, done := rootlessStep(ctx, cfg, &env); done {
		return code
	}
	if cmd == "doctor" {
		return doctor.Run(ctx, cfg, env, os.Stdout, repairACLs)
	}
	flush, ok := startTracing(ctx)
	if !ok {
		return 2
	}
	defer flush()
	if err := app.Serve(ctx, cfg, env); err != nil {
		fmt.Fprintln(os.Stderr, "codexec:", err)
		return 1
	}
	return 0
}

// repairACLsFlag and printDockerfileFlag are doctor's own flags, not
// settings.
const (
	repairACLsFlag      = "--repair-acls"
	printDockerfileFlag = "--print-dockerfile"
)

// printEnv writes one line per setting: variable, effective value, source;
// then the adjustments Load made so that settings compose.
func printEnv(w io.Writer, settings []config.Effective, warnings []string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tSOURCE\tVALUE")
	for _, s := range settings {
		v := s.Value
		if v == "" {
			v = "(unset)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Env, s.Source, v)
	}
	_ = tw.Flush()
	for _, warn := range warnings {
		fmt.Fprintln(w, "adjusted:", warn)
	}
}

// takeFlag removes a boolean flag (also spelled with one dash) from args and
// reports whether it was there.
// takeValue removes flag name (-name or --name, with its value as the
// next argument or after =) from args; ok is false when it has no value.
func takeValue(args []string, name, def string) (value string, rest []string, ok bool) {
	value = def
	for i := 0; i < len(args); i++ {
		n := "-" + strings.TrimLeft(args[i], "-")
		if v, found := strings.CutPrefix(n, name+"="); found {
			value = v
			continue
		}
		if n == name {
			if i+1 >= len(args) {
				return "", nil, false
			}
			value, i = args[i+1], i+1
			continue
		}
		rest = append(rest, args[i])
	}
	return value, rest, true
}

func takeFlag(args []string, name string) (bool, []string) {
	var out []string
	found := false
	for _, a := range args {
		if a == name || a == name[1:] {
			found = true
			continue
		}
		out = append(out, a)
	}
	return found, out
}

// startProfile writes a CPU profile of the whole run to path (a developer
// aid for performance work; set CODEXEC_CPU_PROFILE).
func startProfile(path string) func() {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec: cpu profile:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "codexec: cpu profile:", err)
		return func() { _ = f.Close() }
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}
