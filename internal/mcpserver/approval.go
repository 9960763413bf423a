package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codexec/codexec/internal/approval"
	"github.com/codexec/codexec/internal/execlog"
	"github.com/codexec/codexec/internal/mcpserver/callinfo"
	"github.com/codexec/codexec/internal/tenant"
)

// Approval is the approval gate as the server runs it: which calls need a
// person's approval (Policy), the signer of the questions' request states,
// and how long a person has to answer.
type Approval struct {
	Policy  *approval.Policy
	Signer  *approval.Signer
	Timeout time.Duration
}

// questionID names the one input request of a question.
const questionID = "approval"

// multiRoundTrip is the first protocol revision in which a tool result may
// ask the client for input (multi round-trip requests).
const multiRoundTrip = "2026-07-28"

// gate is the tool.Gate of an approval-gated server. A call that needs
// approval is asked about: over multi round-trip revisions the result is
// the question with a signed request state, and the retry carrying the
// answer is verified against this very call; over older revisions the
// question is an elicitation/create request made here, waited for up to
// the timeout. Anything but an approval refuses the call before it runs,
// and every decision is logged.
func (s *Server) gate(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a := s.deps.Approval
	if a == nil || !approval.Gated(req.Params.Name) {
		return nil, nil
	}
	call := s.approvalCall(ctx, req)
	needed, reasons := a.Policy.Decide(call)
	if !needed {
		return nil, nil
	}
	bind := approval.Binding{Principal: tenant.From(ctx), Tool: call.Tool, Args: req.Params.Arguments}
	if call.Tool == "run_script" {
		bind.Shown = call.Code // the saved code the person is shown, not only its name
	}
	q, err := a.decide(ctx, req, call, reasons, bind)
	if q != nil {
		return q, nil
	}
	s.logDecision(ctx, req, call, reasons, err)
	return nil, err
}

// decide asks, or reads the answer a retry carries: a question result, or
// nil (approved) or the refusal.
func (a *Approval) decide(ctx context.Context, req *mcp.CallToolRequest, call approval.Call, reasons []string, bind approval.Binding) (*mcp.CallToolResult, error) {
	if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
		return nil, a.redeem(req, bind)
	}
	if err := canAsk(req, reasons); err != nil {
		return nil, err
	}
	msg, schema := approval.Question(call, reasons)
	q := &mcp.ElicitParams{Mode: "form", Message: msg, RequestedSchema: schema}
	if v := req.ProtocolVersion(); v == "" || v >= multiRoundTrip {
		state, err := a.Signer.Issue(bind)
		if err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{questionID: q}, RequestState: state}, nil
	}
	return nil, a.ask(ctx, req, q)
}

// redeem checks a retry's request state against this call, then its answer.
func (a *Approval) redeem(req *mcp.CallToolRequest, bind approval.Binding) error {
	if err := a.Signer.Redeem(req.Params.RequestState, bind); err != nil {
		return err
	}
	r, ok := req.Params.InputResponses[questionID].(*mcp.ElicitResult)
	if !ok || r == nil {
		return approval.Refuse(approval.Refused, "the call carries an approval request state but no answer to the question %q; nothing ran. Call again without requestState to be asked", questionID)
	}
	return approval.Answer(r.Action, r.Content)
}

// ask puts the question to the client's user during the call (revisions
// before multi round-trip), waiting up to the timeout.
func (a *Approval) ask(ctx context.Context, req *mcp.CallToolRequest, q *mcp.ElicitParams) error {
	wait, cancel := context.WithTimeout(ctx, a.Timeout)
	defer cancel()
	res, err := req.Session.Elicit(wait, q)
	switch {
	case err == nil:
		return approval.Answer(res.Action, res.Content)
	case ctx.Err() != nil:
		return ctx.Err()
	case wait.Err() != nil:
		return approval.Refuse(approval.TimedOut, "nobody answered the approval question within %v; nothing ran. Call again to be asked again", a.Timeout)
	}
	return approval.Refuse(approval.Refused, "the client could not ask its user to approve this call (%v); nothing ran", err)
}

// canAsk refuses a call from a client that cannot show its user a form.
func canAsk(req *mcp.CallToolRequest, reasons []string) error {
	caps := req.ClientCapabilities()
	if caps != nil && caps.Elicitation != nil && (caps.Elicitation.Form != nil || caps.Elicitation.URL == nil) {
		return nil
	}
	why := "the operator asks about such calls"
	if len(reasons) > 0 {
		why = reasons[0]
	}
	return approval.Refuse(approval.Refused, "this call needs a person's approval (%s), but the client does not support form elicitation, so nobody can be asked; nothing ran. Use a client that can show its user a question (MCP elicitation), or ask the operator about CODEXEC_APPROVAL", why)
}

// logDecision records a decision in the execution log: approved (err nil)
// or how it was refused.
func (s *Server) logDecision(ctx context.Context, req *mcp.CallToolRequest, call approval.Call, reasons []string, err error) {
	outcome, detail := approval.Approved, ""
	var r *approval.Refusal
	switch {
	case errors.As(err, &r):
		outcome, detail = r.Outcome, r.Msg
	case err != nil:
		outcome, detail = approval.Refused, err.Error()
	}
	if s.deps.ExecLog == nil {
		return
	}
	e := execlog.Approval{At: time.Now().UTC(), Owner: tenant.From(ctx), Tool: call.Tool, Summary: approval.Summary(call),
		Decision: string(outcome), Reasons: reasons, Detail: detail, Context: callinfo.CallContext(req)}
	if err := s.deps.ExecLog.AppendApproval(e); err != nil {
		slog.Warn("approval decision not logged", "tool", call.Tool, "decision", outcome, "err", err)
	}
}

// gatedArgs are the arguments of the gated tools that say what a call
// would run (each tool has some of them).
type gatedArgs struct {
	Language   string   `json:"language"`
	Code       string   `json:"code"`
	Command    string   `json:"command"`
	File       string   `json:"file"`
	Args       []string `json:"args"`
	Cwd        string   `json:"cwd"`
	WorkingDir string   `json:"working_dir"`
	Package    string   `json:"package"`
	Name       string   `json:"name"`
	SessionID  string   `json:"session_id"`
	ContextID  string   `json:"context_id"`
	Tools      []string `json:"tools"`
	Intent     string   `json:"intent"`
	Network    *struct {
		Allow []string `json:"allow"`
	} `json:"network"`
}

// approvalCall describes what the call would run. The arguments decoded
// already (tool.Add checked them), so they parse.
func (s *Server) approvalCall(ctx context.Context, req *mcp.CallToolRequest) approval.Call {
	var g gatedArgs
	_ = json.Unmarshal(req.Params.Arguments, &g)
	c := approval.Call{Tool: req.Params.Name, Language: g.Language, Code: g.Code, Command: g.Command, Program: g.File,
		Args: g.Args, Package: g.Package, Session: cmp.Or(g.SessionID, g.ContextID), WorkingDir: cmp.Or(g.WorkingDir, g.Cwd),
		Upstream: g.Tools, Intent: g.Intent}
	if g.Network != nil {
		c.Network = g.Network.Allow
	}
	if c.Tool == "run_script" {
		c.Script = g.Name
		c.Language, c.Code = s.scriptCode(ctx, g.Name)
	}
	return c
}

// scriptCode is the current code of the caller's saved script name, to
// show and to bind the approval to ("" when it cannot be read: the
// question then shows the name only, and the run fails if it is missing).
func (s *Server) scriptCode(ctx context.Context, name string) (lang, code string) {
	if s.deps.Scripts == nil || s.deps.Scripts.Libraries == nil {
		return "", ""
	}
	lib, err := s.deps.Scripts.Libraries.For(ctx)
	if err != nil {
		return "", ""
	}
	sc, err := lib.Get(ctx, name, 0)
	if err != nil {
		return "", ""
	}
	return sc.Language, sc.Code
}
