// Package filetools is the MCP face of files: the files toolset
// (upload_file, download_file, list_files), files as MCP resources, and
// what the run tools do with files (staging uploads into a run, linking
// and inlining the files a run created). It reads a session's workspace or
// a kept item of the files store, always confined to it, for the calling
// principal only (the stores filter by tenant.From).
package filetools

import (
	"github.com/codexec/codexec/internal/config"
	"github.com/codexec/codexec/internal/files"
	"github.com/codexec/codexec/internal/session"
	"github.com/codexec/codexec/internal/transfer"
)

// Deps are the services files are reached through.
type Deps struct {
	Config   config.Config    // upload, download and image size limits; disk limit and sandbox dir
	Files    files.Store      // staged uploads and kept artifacts; nil: no files toolset, resources or attachments
	Sessions *session.Manager // live sessions' workspaces; nil: none reachable
	// Transfers issues the single-use URLs of transfer "url" (HTTP only);
	// nil: the bytes always travel in the calls.
	Transfers *transfer.Tickets
}

// Files serves the files toolset and resources and gives the run tools
// their file steps. Its methods are safe for concurrent calls.
type Files struct {
	deps Deps
}

// New returns the Files over d.
func New(d Deps) *Files { return &Files{deps: d} }
