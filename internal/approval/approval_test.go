package approval

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/codexec/codexec/internal/errcode"
)

func TestParseRules(t *testing.T) {
	tests := []struct {
		name, text, wantErr string
	}{
		{"empty file keeps defaults", "", ""},
		{"yaml", "commands: [ls, cat]\ninstall_package: false\nnetwork: true\ncode_patterns: ['rm\\s+-rf']\ntools: {run_script: always}\n", ""},
		{"json", `{"commands": ["ls"], "code_patterns": ["subprocess"], "tools": {"execute_code": "never"}}`, ""},
		{"unknown field", "command: [ls]\n", "field command not found"},
		{"bad pattern", "code_patterns: ['(']\n", "code_patterns[0]"},
		{"unknown tool", "tools: {list_files: always}\n", "not a tool that runs code"},
		{"bad override", "tools: {execute_code: sometimes}\n", "want always or never"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRules([]byte(tc.text))
			if tc.wantErr == "" && err != nil {
				t.Fatalf("ParseRules: %v", err)
			}
			if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("ParseRules error = %v, want it to contain %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Off, "off": Off, "risky": Risky, " always ": Always} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("sometimes"); err == nil {
		t.Error("ParseMode(sometimes) accepted")
	}
}

func TestDecide(t *testing.T) {
	no := false
	rules := Rules{Commands: []string{"ls", "echo", "/usr/bin/cat"}, CodePatterns: []string{`\bsubprocess\b`, `rm\s+-rf`},
		Tools: map[string]string{"run_script": "always", "send_to_session": "never"}}
	lenient := Rules{Commands: []string{"ls"}, InstallPackage: &no, Network: &no}
	tests := []struct {
		name   string
		mode   Mode
		rules  Rules
		call   Call
		needed bool
		reason string
	}{
		{"off asks nothing", Off, rules, Call{Tool: "execute_command", Command: "curl x"}, false, ""},
		{"always asks a run", Always, Rules{}, Call{Tool: "execute_code", Code: "print(1)"}, true, "every call"},
		{"always skips tools that run nothing", Always, Rules{}, Call{Tool: "list_files"}, false, ""},
		{"start_session without network", Always, Rules{}, Call{Tool: "start_session", Language: "python"}, false, ""},
		{"start_session with network", Always, Rules{}, Call{Tool: "start_session", Network: []string{"pypi.org"}}, true, "every call"},
		{"plain code is not risky", Risky, rules, Call{Tool: "execute_code", Language: "python", Code: "print(1)"}, false, ""},
		{"pattern", Risky, rules, Call{Tool: "execute_code", Code: "import subprocess"}, true, `matches the pattern "\\bsubprocess\\b"`},
		{"network", Risky, rules, Call{Tool: "execute_code", Code: "x", Network: []string{"api.example.com"}}, true, "asks for network: api.example.com"},
		{"network allowed by rules", Risky, lenient, Call{Tool: "execute_code", Code: "x", Network: []string{"a.example"}}, false, ""},
		{"install", Risky, rules, Call{Tool: "install_package", Package: "requests"}, true, "installs a package"},
		{"install allowed by rules", Risky, lenient, Call{Tool: "install_package", Package: "requests"}, false, ""},
		{"listed command", Risky, rules, Call{Tool: "execute_command", Command: "ls -l | cat"}, true, "outside the rules' list"},
		{"listed commands only", Risky, rules, Call{Tool: "execute_command", Command: "ls -l && echo hi"}, false, ""},
		{"absolute path of a listed command", Risky, rules, Call{Tool: "execute_process", Program: "/usr/bin/cat"}, false, ""},
		{"unlisted program", Risky, rules, Call{Tool: "execute_process", Program: "curl"}, true, "outside the rules' list"},
		{"no list: every command", Risky, Rules{}, Call{Tool: "execute_command", Command: "ls"}, true, "rules name no command"},
		{"no list: every program", Risky, Rules{}, Call{Tool: "execute_process", Program: "ls"}, true, "rules name no command"},
		{"tool always", Risky, rules, Call{Tool: "run_script", Script: "x"}, true, "every run_script call"},
		{"tool never", Always, rules, Call{Tool: "send_to_session", Code: "import subprocess"}, false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(tc.mode, tc.rules, "/usr/bin:/bin")
			if err != nil {
				t.Fatal(err)
			}
			needed, reasons := p.Decide(tc.call)
			if needed != tc.needed {
				t.Fatalf("needed = %v (%q), want %v", needed, reasons, tc.needed)
			}
			if joined := strings.Join(reasons, "; "); !strings.Contains(joined, tc.reason) {
				t.Errorf("reasons %q lack %q", joined, tc.reason)
			}
		})
	}
}

func TestQuestion(t *testing.T) {
	code := strings.Repeat("print(1)\n", ShownLines+7)
	msg, schema := Question(Call{Tool: "execute_code", Language: "python", Code: code, Network: []string{"pypi.org"},
		WorkingDir: "/tmp/w"}, []string{"it asks for network: pypi.org"})
	for _, want := range []string{"Approve this execute_code call", "Asked because it asks for network: pypi.org.",
		"Language: python", "Network: pypi.org", "Working directory: /tmp/w", "… and 7 more lines (47 in all)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("question lacks %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "print(1)"); n != ShownLines {
		t.Errorf("question shows %d code lines, want %d", n, ShownLines)
	}
	want := map[string]any{"type": "object", "required": []string{AnswerField}}
	got := map[string]any{"type": schema["type"], "required": schema["required"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
	msg, _ = Question(Call{Tool: "execute_code", Code: "await x()", Intent: "sum the sales", Upstream: []string{"crm.*"}}, nil)
	if !strings.Contains(msg, "Intent: sum the sales\nUpstream tools: crm.*\n") {
		t.Errorf("code-mode question:\n%s", msg)
	}
	msg, _ = Question(Call{Tool: "execute_command", Command: "ls"}, nil)
	if !strings.Contains(msg, "Network: none") || !strings.Contains(msg, "Command:\nls\n") {
		t.Errorf("command question:\n%s", msg)
	}
}

func TestAnswer(t *testing.T) {
	tests := []struct {
		action  string
		content map[string]any
		want    Outcome
	}{
		{"accept", map[string]any{"approve": true}, Approved},
		{"accept", map[string]any{"approve": false}, Declined},
		{"accept", nil, Declined},
		{"accept", map[string]any{"approve": "true"}, Declined},
		{"decline", nil, Declined},
		{"cancel", nil, Cancelled},
		{"", nil, Refused},
	}
	for _, tc := range tests {
		if got := outcomeOf(Answer(tc.action, tc.content)); got != tc.want {
			t.Errorf("Answer(%q, %v) = %s, want %s", tc.action, tc.content, got, tc.want)
		}
	}
}

func outcomeOf(err error) Outcome {
	if err == nil {
		return Approved
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r.Outcome
	}
	return "uncoded: " + Outcome(err.Error())
}

func TestSigner(t *testing.T) {
	key := []byte(strings.Repeat("k", MinKeyBytes))
	bind := Binding{Principal: "alice", Tool: "execute_code", Args: json.RawMessage(`{"language":"python","code":"print(1)","timeout":5}`)}
	tests := []struct {
		name   string
		change func(state string, b Binding, s *Signer) (string, Binding)
		want   Outcome
	}{
		{"same call", func(st string, b Binding, _ *Signer) (string, Binding) { return st, b }, Approved},
		{"arguments re-encoded", func(st string, b Binding, _ *Signer) (string, Binding) {
			b.Args = json.RawMessage(`{ "timeout":5, "code":"print(1)", "language":"python" }`)
			return st, b
		}, Approved},
		{"other arguments", func(st string, b Binding, _ *Signer) (string, Binding) {
			b.Args = json.RawMessage(`{"language":"python","code":"print(2)","timeout":5}`)
			return st, b
		}, Refused},
		{"other number", func(st string, b Binding, _ *Signer) (string, Binding) {
			b.Args = json.RawMessage(`{"language":"python","code":"print(1)","timeout":5.0}`)
			return st, b
		}, Refused},
		{"other principal", func(st string, b Binding, _ *Signer) (string, Binding) { b.Principal = "mallory"; return st, b }, Refused},
		{"other tool", func(st string, b Binding, _ *Signer) (string, Binding) { b.Tool = "run_code"; return st, b }, Refused},
		{"other script text", func(st string, b Binding, _ *Signer) (string, Binding) { b.Shown = "changed"; return st, b }, Refused},
		{"tampered payload", func(st string, b Binding, _ *Signer) (string, Binding) { return tamper(st, 5), b }, Refused},
		{"tampered signature", func(st string, b Binding, _ *Signer) (string, Binding) { return tamper(st, len(st)-3), b }, Refused},
		{"garbage", func(_ string, b Binding, _ *Signer) (string, Binding) { return "approved", b }, Refused},
		{"other key", func(_ string, b Binding, _ *Signer) (string, Binding) {
			other, _ := NewSigner([]byte(strings.Repeat("o", MinKeyBytes)), time.Minute)
			st, _ := other.Issue(b)
			return st, b
		}, Refused},
		{"expired", func(st string, b Binding, s *Signer) (string, Binding) {
			s.now = func() time.Time { return time.Now().Add(2 * time.Minute) }
			return st, b
		}, TimedOut},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSigner(key, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Issue(bind)
			if err != nil {
				t.Fatal(err)
			}
			st2, b2 := tc.change(st, bind, s)
			if got := outcomeOf(s.Redeem(st2, b2)); got != tc.want {
				t.Fatalf("Redeem = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSignerReplay(t *testing.T) {
	s, _ := NewSigner([]byte(strings.Repeat("k", MinKeyBytes)), time.Minute)
	b := Binding{Principal: "p", Tool: "execute_code", Args: json.RawMessage(`{}`)}
	st, _ := s.Issue(b)
	if err := s.Redeem(st, b); err != nil {
		t.Fatalf("first redeem: %v", err)
	}
	err := s.Redeem(st, b)
	if outcomeOf(err) != Refused || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replay: %v", err)
	}
	if errcode.Of(err) != errcode.NotAllowed {
		t.Errorf("code %s, want %s", errcode.Of(err), errcode.NotAllowed)
	}
}

func TestKeys(t *testing.T) {
	if _, err := NewSigner([]byte("short"), time.Minute); err == nil {
		t.Error("a short key was accepted")
	}
	dir := t.TempDir()
	short, long := dir+"/short", dir+"/long"
	mustWrite(t, short, "abc\n")
	mustWrite(t, long, strings.Repeat("x", MinKeyBytes)+"\n")
	if _, err := LoadKey(short); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Errorf("short key file: %v", err)
	}
	if k, err := LoadKey(long); err != nil || len(k) != MinKeyBytes {
		t.Errorf("key file: %d bytes, %v", len(k), err)
	}
}

func tamper(s string, i int) string {
	b := []byte(s)
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
