package e2e

import (
	"strings"
	"testing"
)

// TestCallerChosenSessionIDSeed003 follows seed 003 literally: the caller
// sends "session_id": "user123_project_alpha" with no prior call. The first
// call creates that session in the call's language, later calls share its
// state, another id never does, and it is listed like any session.
func TestCallerChosenSessionIDSeed003(t *testing.T) {
	s := start(t)
	r, res := s.exec(map[string]any{"language": "python", "code": "counter = 10", "timeout": 60, "session_id": "user123_project_alpha"})
	if res.IsError || r.Status != "success" || r.SessionID == nil || *r.SessionID != "user123_project_alpha" {
		t.Fatalf("first call: %+v %s", r, text(res))
	}
	r, _ = s.exec(map[string]any{"language": "python", "code": "counter += 1\nprint(counter)", "session_id": "user123_project_alpha"})
	if r.Stdout != "11\n" {
		t.Fatalf("state not shared: %+v", r)
	}
	r, _ = s.exec(map[string]any{"language": "python", "code": "print('counter' in globals())", "session_id": "user456_project_beta"})
	if r.Stdout != "False\n" {
		t.Fatalf("a different id shares state: %+v", r)
	}
	var sessions struct {
		Sessions []listedSession `json:"sessions"`
	}
	s.callInto("list_sessions", map[string]any{}, &sessions)
	var contexts struct {
		Contexts []struct {
			ContextID string `json:"context_id"`
		} `json:"contexts"`
	}
	s.callInto("list_contexts", map[string]any{}, &contexts)
	if !strings.Contains(fmtIDs(sessions.Sessions), "user123_project_alpha:session:python") ||
		!strings.Contains(text(s.call("list_contexts", map[string]any{})), "user123_project_alpha") {
		t.Fatalf("not listed: %+v %+v", sessions, contexts)
	}
	if res := s.call("send_to_session", map[string]any{"session_id": "user123_project_alpha", "code": "print(counter)"}); !strings.Contains(text(res), "11") {
		t.Fatalf("send_to_session with the caller's id: %s", text(res))
	}
}

type listedSession struct {
	SessionID string `json:"session_id"`
	Kind      string `json:"kind"`
	Language  string `json:"language"`
}

func fmtIDs(ss []listedSession) string {
	var b strings.Builder
	for _, x := range ss {
		b.WriteString(x.SessionID + ":" + x.Kind + ":" + x.Language + " ")
	}
	return b.String()
}

// TestCallerChosenSessionTimeoutKeepsState: a timeout in a caller-named
// session interrupts the code and keeps the state, as in any session.
func TestCallerChosenSessionTimeoutKeepsState(t *testing.T) {
	s := start(t)
	s.exec(map[string]any{"language": "node", "code": "let seen = 41", "session_id": "user123_project_alpha"})
	r, _ := s.exec(map[string]any{"language": "node", "code": "while (true) {}", "timeout": 1, "session_id": "user123_project_alpha"})
	if r.Status != "timeout" || !r.TimedOut {
		t.Fatalf("timeout: %+v", r)
	}
	r, _ = s.exec(map[string]any{"code": "console.log(seen + 1)", "language": "javascript", "session_id": "user123_project_alpha"})
	if r.Stdout != "42\n" {
		t.Fatalf("state lost after timeout: %+v", r)
	}
}

// TestCallerChosenSessionIDRules: ids are validated, creating needs a
// language, and caller-named sessions count against CODEXEC_MAX_SESSIONS.
func TestCallerChosenSessionIDRules(t *testing.T) {
	s := start(t, "CODEXEC_MAX_SESSIONS=2")
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"language": "python", "code": "1", "session_id": "../../etc"}, "invalid session_id"},
		{map[string]any{"language": "python", "code": "1", "session_id": strings.Repeat("a", 65)}, "invalid session_id"},
		{map[string]any{"code": "1", "session_id": "no_language_yet"}, "pass language"},
		{map[string]any{"language": "bash", "code": "echo", "session_id": "bash_session"}, "python and node"},
	} {
		if _, res := s.exec(c.args); !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%v: want an error containing %q, got %s", c.args, c.want, text(res))
		}
	}
	s.exec(map[string]any{"language": "python", "code": "1", "session_id": "one"})
	s.startSession("python")
	_, res := s.exec(map[string]any{"language": "python", "code": "1", "session_id": "three"})
	if !res.IsError || !strings.Contains(text(res), "CODEXEC_MAX_SESSIONS=2") {
		t.Fatalf("limit not applied to caller-named sessions: %s", text(res))
	}
}
