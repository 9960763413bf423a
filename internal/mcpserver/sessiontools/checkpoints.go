package sessiontools

import (
	"context"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/checkpoint"
	"github.com/codexec/codexec/internal/mcpserver/tool"
	"github.com/codexec/codexec/internal/sessionckpt"
)

// PauseOut is pause_session's output: the checkpoint's size and what it
// could not carry (what it kept, resume_session lists).
type PauseOut struct {
	SessionID       string            `json:"session_id"`
	Status          string            `json:"status"`
	CheckpointBytes int64             `json:"checkpoint_bytes"`
	Lost            map[string]string `json:"lost,omitempty"`
	FilesLost       map[string]string `json:"files_lost,omitempty"`
	Notes           []string          `json:"notes,omitempty"`
}

// ResumeOut is resume_session's output; Resumed is absent when the
// session was live already.
type ResumeOut struct {
	SessionID string               `json:"session_id"`
	Status    string               `json:"status"`
	Resumed   *sessionckpt.Resumed `json:"resumed,omitempty"`
}

// ForkIn is fork_session's input.
type ForkIn struct {
	SessionID    string    `json:"session_id"`
	Count        *tool.Int `json:"count,omitempty" jsonschema:"children, default 1"`
	AllowSecrets bool      `json:"allow_secrets,omitempty" jsonschema:"copy values named like *token*, *key*, *secret*, *password*"`
}

// ForkChild is one child of fork_session: its id or why it failed.
type ForkChild struct {
	SessionID string `json:"session_id,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ForkOut is fork_session's output: the children, and what each restored
// and lost (the first child's report; children differ only when one
// fails to re-import something).
type ForkOut struct {
	Children []ForkChild          `json:"children"`
	Resumed  *sessionckpt.Resumed `json:"resumed,omitempty"`
}

func (s *toolset) registerCheckpoints() {
	if !s.deps.Sessions.CheckpointsEnabled() {
		return
	}
	tool.Add(s.r, &mcp.Tool{Name: "pause_session", Title: "Pause session",
		Description: "Checkpoint a session and stop its process; it stays listed as paused and resumes on its next use. Says what cannot be kept.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(true), OpenWorldHint: tool.Ptr(false)}}, s.pauseSession)
	tool.Add(s.r, &mcp.Tool{Name: "resume_session", Title: "Resume session",
		Description: "Resume a paused session now: restored and lost names, checkpoint age.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(false), IdempotentHint: true, OpenWorldHint: tool.Ptr(false)}}, s.resumeSession)
	tool.Add(s.r, &mcp.Tool{Name: "fork_session", Title: "Fork session",
		Description: "Copy a session into count new sessions, each with its own sandbox and copy of the workspace; random generators reseeded.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: tool.Ptr(false), OpenWorldHint: tool.Ptr(false)}}, s.forkSession)
}

func (s *toolset) pauseSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionIDIn) (*mcp.CallToolResult, PauseOut, error) {
	p, err := s.deps.Sessions.Pause(ctx, in.SessionID)
	if err != nil {
		return nil, PauseOut{}, checkpointError(err)
	}
	r := p.Report
	return nil, PauseOut{SessionID: p.ID, Status: sessionckpt.StatusPaused, CheckpointBytes: p.Bytes, Lost: r.Lost, FilesLost: r.FilesLost, Notes: r.Notes}, nil
}

func (s *toolset) resumeSession(ctx context.Context, _ *mcp.CallToolRequest, in SessionIDIn) (*mcp.CallToolResult, ResumeOut, error) {
	sess, r, err := s.deps.Sessions.Resume(ctx, in.SessionID)
	if err != nil {
		return nil, ResumeOut{}, checkpointError(err)
	}
	return nil, ResumeOut{SessionID: sess.ID, Status: "active", Resumed: r}, nil
}

func (s *toolset) forkSession(ctx context.Context, _ *mcp.CallToolRequest, in ForkIn) (*mcp.CallToolResult, ForkOut, error) {
	n := 1
	if c := tool.IntPtr(in.Count); c != nil {
		n = *c
	}
	fi, err := s.deps.Sessions.Fork(ctx, in.SessionID, n, in.AllowSecrets)
	if err != nil {
		return nil, ForkOut{}, checkpointError(err)
	}
	out := ForkOut{Children: make([]ForkChild, len(fi.Children)), Resumed: fi.Resumed}
	for i, c := range fi.Children {
		out.Children[i].SessionID = c.ID
		if c.Err != nil {
			out.Children[i].Error = tool.Classify(c.Err).Message
		}
	}
	return nil, out, nil
}

// checkpointError codes the failures of the checkpoint tools.
func checkpointError(err error) error {
	var secrets *sessionckpt.ErrSecrets
	switch {
	case errors.Is(err, sessionckpt.ErrCheckpointsOff):
		return tool.Coded(tool.CodeNotEnabled, "%v", err)
	case errors.As(err, &secrets):
		return tool.Coded(tool.CodeNotAllowed, "%v", err)
	case errors.Is(err, sessionckpt.ErrStateTooBig), errors.Is(err, checkpoint.ErrStoreFull):
		return tool.Coded(tool.CodeLimitExceeded, "%v", err)
	case errors.Is(err, sessionckpt.ErrBadCount):
		return tool.Invalidf("%v", err)
	}
	return tool.Classify(err)
}
