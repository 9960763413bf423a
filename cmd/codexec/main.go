// Command codexec is an MCP server that runs code for AI agents in a sandbox.
//
//	codexec [serve] [flags]   serve MCP over stdio (the default)
//	codexec doctor [--repair-acls] [flags]
//	                          report which sandbox modes work on this host and
//	                          ACL grants earlier versions left (and remove them)
//	codexec env               list every environment variable and its default
//
// main only parses configuration and wires the packages together; see
// internal/app for the assembly.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/packages"
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
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	if cmd == "env" {
		for _, e := range config.Env() {
			fmt.Printf("%-38s default %-12q %s\n", e[0], e[1], e[2])
		}
		return 0
	}
	repairACLs := false
	if cmd == "doctor" {
		repairACLs, args = takeFlag(args, "--repair-acls")
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(args, os.Getenv, home, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec: configuration error:", err)
		return 2
	}
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
	switch cmd {
	case "serve":
		err = app.Serve(ctx, cfg, env)
	case "doctor":
		return app.Doctor(ctx, cfg, env, os.Stdout, repairACLs)
	default:
		err = fmt.Errorf("unknown command %q (serve, doctor, env)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "codexec:", err)
		return 1
	}
	return 0
}

// takeFlag removes a boolean flag (also spelled with one dash) from args and
// reports whether it was there.
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
