package approval

import (
	"fmt"
	"strings"
)

// ShownLines is how many lines of code (or a command line) the question
// shows; the rest is counted.
const ShownLines = 40

// maxShownChars bounds the shown text of very long lines.
const maxShownChars = 4000

// AnswerField is the form's one field: a boolean the person ticks to
// approve.
const AnswerField = "approve"

// Question is what the person is asked: the message (what will run and
// why it is asked) and the form's schema (one required boolean).
func Question(c Call, reasons []string) (message string, schema map[string]any) {
	var b strings.Builder
	fmt.Fprintf(&b, "Approve this %s call before it runs?\n", c.Tool)
	if len(reasons) > 0 {
		fmt.Fprintf(&b, "Asked because %s.\n", strings.Join(reasons, "; "))
	}
	for _, f := range fields(c) {
		if f[1] != "" {
			fmt.Fprintf(&b, "%s: %s\n", f[0], f[1])
		}
	}
	if c.Command != "" {
		b.WriteString("Command:\n" + excerpt(c.Command))
	}
	if c.Code != "" {
		b.WriteString("Code:\n" + excerpt(c.Code))
	}
	return b.String(), formSchema()
}

// fields are the question's one-line facts about c, as label and value
// (an empty value is left out).
func fields(c Call) [][2]string {
	network := strings.Join(c.Network, ", ")
	if network == "" && c.Tool != "install_package" && (c.Code != "" || c.Command != "" || c.Program != "") {
		network = "none"
	}
	var args string
	if len(c.Args) > 0 {
		args = fmt.Sprintf("%q", c.Args)
	}
	return [][2]string{{"Language", c.Language}, {"Script", c.Script}, {"Session", c.Session}, {"Program", c.Program},
		{"Arguments", args}, {"Package", c.Package}, {"Intent", c.Intent}, {"Upstream tools", strings.Join(c.Upstream, ", ")},
		{"Network", network}, {"Working directory", c.WorkingDir}}
}

// formSchema is the form: one required boolean, AnswerField.
func formSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			AnswerField: map[string]any{"type": "boolean", "title": "Approve",
				"description": "Tick to let this run; leave unticked or decline to refuse it."},
		},
		"required": []string{AnswerField},
	}
}

// excerpt is text's first ShownLines lines (and at most maxShownChars),
// with a count of what is left out.
func excerpt(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	shown := lines
	if len(shown) > ShownLines {
		shown = shown[:ShownLines]
	}
	out := strings.Join(shown, "\n")
	cut := false
	if len(out) > maxShownChars {
		out, cut = out[:maxShownChars], true
	}
	out += "\n"
	if rest := len(lines) - len(shown); rest > 0 {
		out += fmt.Sprintf("… and %d more lines (%d in all)\n", rest, len(lines))
	} else if cut {
		out += fmt.Sprintf("… cut at %d characters (%d in all)\n", maxShownChars, len(text))
	}
	return out
}

// Summary is a one-line description of c for the execution log.
func Summary(c Call) string {
	first := func(s string) string {
		s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
		if len(s) > 120 {
			s = s[:120] + "…"
		}
		return s
	}
	switch {
	case c.Command != "":
		return first(c.Command)
	case c.Program != "":
		return first(strings.Join(append([]string{c.Program}, c.Args...), " "))
	case c.Package != "":
		return c.Language + " package " + c.Package
	case c.Script != "":
		return "script " + c.Script
	case c.Code != "":
		return c.Language + ": " + first(c.Code)
	}
	return c.Tool
}

// Answer reads the person's answer (the elicitation's action and
// content): nil when approved, else the *Refusal saying how it ended.
func Answer(action string, content map[string]any) error {
	switch action {
	case "accept":
		if ok, _ := content[AnswerField].(bool); ok {
			return nil
		}
		return refusal(Declined, "a person declined to approve this call (the form came back without %q ticked); nothing ran", AnswerField)
	case "decline":
		return refusal(Declined, "a person declined to approve this call; nothing ran")
	case "cancel":
		return refusal(Cancelled, "the person asked to approve this call dismissed the question; nothing ran. Call again to be asked again")
	default:
		return refusal(Refused, "the client answered the approval question with %q, which is none of accept, decline or cancel; nothing ran", action)
	}
}
