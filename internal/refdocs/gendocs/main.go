// Command gendocs writes the generated reference documents (tools.md and
// settings.md, package refdocs) into a directory, docs/ by default when run
// by `go generate ./internal/refdocs`:
//
//	go run ./internal/refdocs/gendocs -out docs
//
// It assembles a throwaway server in a temporary directory to list the
// tools it registers; nothing of the host's configuration is read.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/codexec/codexec/internal/app"
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/refdocs"
	"github.com/codexec/codexec/internal/sandbox/helper"
)

func main() {
	// The throwaway server may re-execute this binary as its sandbox helper.
	if code, ok := helper.Dispatch(os.Args[1:]); ok {
		os.Exit(code)
	}
	out := flag.String("out", "docs", "directory to write tools.md and settings.md into")
	flag.Parse()
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	// The server's start-up log (the subprocess-mode warning) is noise here.
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	files, err := refdocs.Generate(context.Background(), app.HostEnv{Path: os.Getenv("PATH")}, config.Flags())
	if err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		path := filepath.Join(dir, n)
		if err := os.WriteFile(path, files[n], 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", path)
	}
	return nil
}
