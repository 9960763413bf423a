package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codexec/codexec/internal/checkpoint"
)

// Hostile checkpoints. The server never deserialises interpreter state:
// a checkpoint's bytes go back only into a new sandboxed interpreter. So a
// checkpoint crafted to run code when unpickled (written over the stored
// one, as someone with access to the blob store could) runs that code in
// the sandbox, as the sandbox user, confined to the session's workspace;
// and with CODEXEC_CHECKPOINT_KEY set, an altered checkpoint is refused
// before anything reads it.

// evilPickle is protocol-0 pickle calling os.system(cmd) when loaded.
func evilPickle(cmd string) []byte {
	return []byte("cos\nsystem\n(S'" + cmd + "'\ntR.")
}

// overwriteCheckpoint replaces the interpreter state of the stored
// checkpoint of paused session id with a python state holding one value,
// "evil", whose unpickling runs cmd. The workspace part is kept.
func overwriteCheckpoint(t *testing.T, data, id, cmd string) {
	t.Helper()
	var rec struct {
		Blob string `json:"blob"`
	}
	b, err := os.ReadFile(filepath.Join(data, "checkpoint-records", id+".json"))
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Blob == "" {
		t.Fatalf("checkpoint record of %s: %v %s", id, err, b)
	}
	blob := filepath.Join(data, "checkpoints", rec.Blob, "files", "checkpoint")
	plain, err := os.ReadFile(blob)
	if err != nil {
		t.Fatal(err)
	}
	d, err := checkpoint.Decode(plain)
	if err != nil {
		t.Fatalf("the stored checkpoint is not a plain one: %v", err)
	}
	p := evilPickle(cmd)
	header := fmt.Sprintf(`{"imports": [], "defs": [], "values": [["evil", 0, %d]], "lost": {}, "random": null}`, len(p))
	interp := append([]byte(header+"\n"), p...)
	out, err := checkpoint.Encode(d.Header, interp, d.Data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHostileCheckpointUnpickle: the crafted checkpoint's os.system runs
// inside the sandbox as uid 65534: it writes its workspace and nothing on
// the host outside it (the server's data dir, /etc, /root, a host
// directory); with a checkpoint key the altered checkpoint is refused.
func TestHostileCheckpointUnpickle(t *testing.T) {
	pinsNamespaceMode(t, "pins namespace mode")
	if why := modeAvailable(t, "namespace"); why != "" {
		t.Skip("needs namespace mode: ", why)
	}
	outside := t.TempDir()
	data := t.TempDir()
	targets := []string{filepath.Join(outside, "pwned"), filepath.Join(data, "pwned"), "/etc/codexec-pwned", "/root/codexec-pwned"}
	cmd := "id -u > uid.txt; id -g >> uid.txt"
	for _, p := range targets {
		cmd += "; echo pwned > " + p
	}
	s := startData(t, data, append([]string{"CODEXEC_SANDBOX_MODE=namespace"}, hostileEnv...)...)
	sess := s.startSession("python")
	s.sendOK(sess.SessionID, "x = 1")
	if res := s.call("pause_session", map[string]any{"session_id": sess.SessionID}); res.IsError {
		t.Fatalf("pause_session: %s", text(res))
	}
	overwriteCheckpoint(t, data, sess.SessionID, cmd)
	var r resumeOut
	if res := s.callInto("resume_session", map[string]any{"session_id": sess.SessionID}, &r); res.IsError {
		t.Fatalf("resume_session: %s", text(res))
	}
	out, _ := s.sendOK(sess.SessionID, "print(open('uid.txt').read().split(), evil)")
	if out.Stdout != "['65534', '65534'] 512\n" && out.Stdout != "['65534', '65534'] 256\n" {
		t.Errorf("the payload ran as %q (want uid and gid 65534, and a failing exit status from the writes outside)", out.Stdout)
	}
	for _, p := range targets {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("the payload wrote %s on the host", p)
			_ = os.Remove(p)
		}
	}
	// On the host the file it made belongs to the sandbox user (without
	// root, the account codexec runs as).
	var ws string
	if err := filepath.Walk(filepath.Join(data, "sandbox"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "uid.txt" {
			ws = p
		}
		return nil
	}); err != nil || ws == "" {
		t.Fatalf("uid.txt not found in a workspace under %s", filepath.Join(data, "sandbox"))
	}
	owner, _ := sandboxOwner(t)
	if st, err := os.Stat(ws); err != nil || int(st.Sys().(*syscall.Stat_t).Uid) != owner {
		t.Errorf("%s: %v, owner %+v, want uid %d", ws, err, st.Sys(), owner)
	}

	// With a key, the same alteration is refused before any byte reaches an
	// interpreter.
	keyed := t.TempDir()
	k := startData(t, keyed, "CODEXEC_SANDBOX_MODE=namespace", "CODEXEC_CHECKPOINT_KEY="+strings.Repeat("0f", 32))
	ks := k.startSession("python")
	k.sendOK(ks.SessionID, "x = 1")
	if res := k.call("pause_session", map[string]any{"session_id": ks.SessionID}); res.IsError {
		t.Fatalf("pause_session: %s", text(res))
	}
	sealedAlter(t, keyed, ks.SessionID)
	res := k.call("resume_session", map[string]any{"session_id": ks.SessionID})
	if !res.IsError || !strings.Contains(text(res), "altered") {
		t.Errorf("resume of an altered sealed checkpoint: %s", text(res))
	}
}

// sealedAlter flips one byte of a sealed stored checkpoint.
func sealedAlter(t *testing.T, data, id string) {
	t.Helper()
	var rec struct {
		Blob string `json:"blob"`
	}
	b, _ := os.ReadFile(filepath.Join(data, "checkpoint-records", id+".json"))
	if json.Unmarshal(b, &rec) != nil {
		t.Fatalf("record: %s", b)
	}
	blob := filepath.Join(data, "checkpoints", rec.Blob, "files", "checkpoint")
	sealed, err := os.ReadFile(blob)
	if err != nil || !strings.HasPrefix(string(sealed), checkpoint.SealedMagic) {
		t.Fatalf("the stored checkpoint is not sealed: %v", err)
	}
	sealed[len(sealed)/2] ^= 0x20
	if err := os.WriteFile(blob, sealed, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestHostileCheckpointOtherPrincipal: over HTTP with two tokens, bob can
// neither resume, fork, pause, close, use nor list alice's paused session:
// each answer reads exactly like the one for an id that never existed.
// Alice then resumes it intact.
func TestHostileCheckpointOtherPrincipal(t *testing.T) {
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t))
	alice, bob := s.mustConnect(aliceToken), s.mustConnect(bobToken)
	sid := tenantOK(t, alice, "start_session", map[string]any{"language": "python"})["session_id"].(string)
	tenantOK(t, alice, "send_to_session", map[string]any{"session_id": sid, "code": "secret = 41"})
	tenantOK(t, alice, "pause_session", map[string]any{"session_id": sid})
	ghost := "sess_" + strings.Repeat("0", len(sid)-len("sess_"))
	for _, c := range []struct {
		tool  string
		extra map[string]any
	}{
		{"resume_session", nil}, {"fork_session", map[string]any{"count": 2, "allow_secrets": true}}, {"pause_session", nil},
		{"close_session", nil}, {"send_to_session", map[string]any{"code": "print(secret)"}},
		{"execute_code", map[string]any{"code": "print(secret)"}},
	} {
		args, ghostArgs := map[string]any{"session_id": sid}, map[string]any{"session_id": ghost}
		for k, v := range c.extra {
			args[k], ghostArgs[k] = v, v
		}
		got, want := tenantCall(t, bob, c.tool, args), tenantCall(t, bob, c.tool, ghostArgs)
		if !got.IsError || text(got) != strings.ReplaceAll(text(want), ghost, sid) {
			t.Errorf("bob %s on alice's paused %s: %s (unknown id: %s)", c.tool, sid, text(got), text(want))
		}
	}
	if got := tenantOK(t, bob, "list_sessions", nil)["sessions"].([]any); len(got) != 0 {
		t.Errorf("bob lists alice's paused session: %v", got)
	}
	out := tenantOK(t, alice, "send_to_session", map[string]any{"session_id": sid, "code": "print(secret + 1)"})
	if out["stdout"] != "42\n" || out["resumed"] == nil {
		t.Errorf("alice's resume: %v", out)
	}
}
