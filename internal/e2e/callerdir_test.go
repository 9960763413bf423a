package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A caller's own private directory (mode 0700, like every mkdtemp) used as
// working_dir or cwd: the code has the rights of the directory's owner on
// that mount only (SECURITY.md, "Callers' directories").

const (
	callerSecret = "owner-only-5531"
	otherUID     = 1234 // an id no account on the test host uses
)

// callerDir makes a directory of mode 0700 owned by uid holding secret.txt
// (0600, owned by uid).
func callerDir(t *testing.T, parent, name string, uid int) string {
	t.Helper()
	d := filepath.Join(parent, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(d, "secret.txt")
	if err := os.WriteFile(f, []byte(callerSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{d, f} {
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// testMode is the sandbox mode the e2e servers run in.
func testMode() string {
	if m := serverMode(); m != "" && m != "auto" {
		return m
	}
	return "namespace"
}

// ownerOf returns the host owner of path.
func ownerOf(t *testing.T, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return int(st.Uid)
}

// readAndWrite is python that prints its cwd, the secret and what a write
// in the directory did.
const readAndWrite = "import os\nprint(os.getcwd())\nprint(open('secret.txt').read().strip())\n" +
	"try:\n    open('new.txt', 'w').write('x'); print('WROTE')\nexcept OSError as e:\n    print('errno', e.errno)\n"

// TestCallerPrivateDir: over stdio, a 0700 directory owned by root or by
// another uid is read with its owner's rights in every path a run takes
// (python forked, bash and node warm, a session, execute_command,
// execute_process),
// its own path is the working directory, writes fail read-only with a true
// note, a writable root's new file belongs to the owner, and the server
// reads it for the caller (list_files, download_file) with the same rights.
func TestCallerPrivateDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a caller's private directory means something only with a root server (as deployed)")
	}
	mode := testMode()
	isolated := mode != "subprocess"
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	rw := filepath.Join(base, "rw")
	if err := os.Mkdir(rw, 0o755); err != nil {
		t.Fatal(err)
	}
	s := start(t, "CODEXEC_WRITABLE_ROOTS="+rw, "ALLOWED_COMMANDS=pwd,read,echo,python3")
	for _, c := range []struct {
		name string
		uid  int
	}{{"root", 0}, {"uid_1234", otherUID}} {
		t.Run(c.name, func(t *testing.T) {
			dir := callerDir(t, base, c.name, c.uid)
			t.Run("python", func(t *testing.T) {
				r := decodeExec(t, s.call("execute_code", map[string]any{"language": "python", "working_dir": dir, "code": readAndWrite}))
				checkPrivateRun(t, r, dir, isolated, c.uid)
				_ = os.Remove(filepath.Join(dir, "new.txt"))
			})
			t.Run("bash", func(t *testing.T) {
				r := decodeExec(t, s.call("execute_code", map[string]any{"language": "bash", "working_dir": dir,
					"code": "pwd; read -r l < secret.txt; echo \"$l\""}))
				if want := dir + "\n" + callerSecret + "\n"; r.Stdout != want || r.Status != "success" {
					t.Errorf("bash over %s: %+v, want stdout %q", dir, r, want)
				}
			})
			t.Run("node", func(t *testing.T) {
				r := decodeExec(t, s.call("execute_code", map[string]any{"language": "node", "working_dir": dir,
					"code": "console.log(process.cwd()); console.log(require('fs').readFileSync('secret.txt', 'utf8').trim())"}))
				if want := dir + "\n" + callerSecret + "\n"; r.Stdout != want || r.Status != "success" {
					t.Errorf("node over %s: %+v, want stdout %q", dir, r, want)
				}
			})
			t.Run("session", func(t *testing.T) {
				var out startOut
				if res := s.callInto("start_session", map[string]any{"language": "python", "working_dir": dir}, &out); res.IsError {
					t.Fatalf("start_session: %s", text(res))
				}
				defer s.call("close_session", map[string]any{"session_id": out.SessionID})
				r, isErr := s.send(out.SessionID, "import os\nprint(os.getcwd(), open('secret.txt').read().strip())", nil)
				if want := dir + " " + callerSecret + "\n"; isErr || r.Stdout != want {
					t.Errorf("session over %s: %+v, want %q", dir, r, want)
				}
				l := s.call("list_files", map[string]any{"session_id": out.SessionID})
				if l.IsError || !strings.Contains(text(l), "secret.txt") {
					t.Errorf("list_files: %s", text(l))
				}
				if got := s.download(map[string]any{"session_id": out.SessionID, "path": "secret.txt"}); string(got) != callerSecret+"\n" {
					t.Errorf("download_file = %q", got)
				}
			})
			t.Run("execute_command", func(t *testing.T) {
				res := s.call("execute_command", map[string]any{"command": "pwd; read -r l < secret.txt; echo \"$l\"", "cwd": dir})
				if res.IsError || !strings.Contains(text(res), dir+"\n") || !strings.Contains(text(res), callerSecret) {
					t.Errorf("execute_command in %s: %s", dir, text(res))
				}
			})
			t.Run("execute_process", func(t *testing.T) {
				res := s.call("execute_process", map[string]any{"file": "python3", "cwd": dir,
					"args": []string{"-c", "import os; print(os.getcwd(), open('secret.txt').read().strip())"}})
				if res.IsError || !strings.Contains(text(res), dir+" "+callerSecret) {
					t.Errorf("execute_process in %s: %s", dir, text(res))
				}
			})
		})
	}
	t.Run("writable_root", func(t *testing.T) {
		dir := callerDir(t, rw, "mine", otherUID)
		r := decodeExec(t, s.call("execute_code", map[string]any{"language": "python", "working_dir": dir,
			"code": "open('made.txt', 'w').write('hi'); print(open('secret.txt').read().strip())"}))
		if r.Status != "success" || r.Stdout != callerSecret+"\n" || r.WorkingDirNote != "" && isolated {
			t.Fatalf("a writable root: %+v", r)
		}
		if isolated {
			if got := ownerOf(t, filepath.Join(dir, "made.txt")); got != otherUID {
				t.Errorf("made.txt belongs to uid %d on the host, want the directory's owner %d", got, otherUID)
			}
		}
		if got := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "made.txt"}); string(got) != "hi" {
			t.Errorf("artifact made.txt = %q", got)
		}
	})
	t.Run("refusals_stay", func(t *testing.T) {
		link := filepath.Join(base, "to-data")
		if err := os.Symlink(s.DataDir, link); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ dir, want string }{
			{"/etc", "forbidden"}, {s.DataDir, "codexec's own data"}, {link, "codexec's own data"}, {"/", "whole host"},
		} {
			for _, call := range []struct {
				tool string
				args map[string]any
			}{
				{"execute_code", map[string]any{"language": "python", "working_dir": c.dir, "code": "print(1)"}},
				{"execute_command", map[string]any{"command": "pwd", "cwd": c.dir}},
			} {
				if res := s.call(call.tool, call.args); !res.IsError || !strings.Contains(text(res), c.want) {
					t.Errorf("%s in %s: want a refusal containing %q, got %s", call.tool, c.dir, c.want, text(res))
				}
			}
		}
	})
}

// checkPrivateRun checks readAndWrite's run over dir, owned by uid.
func checkPrivateRun(t *testing.T, r execResult, dir string, isolated bool, uid int) {
	t.Helper()
	if r.Status != "success" {
		t.Fatalf("run over %s: %+v", dir, r)
	}
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	if len(lines) != 3 || lines[0] != dir || lines[1] != callerSecret {
		t.Fatalf("run over %s printed %q, want its path and the secret", dir, r.Stdout)
	}
	if !isolated {
		if lines[2] != "WROTE" || !strings.Contains(r.WorkingDirNote, "subprocess mode") {
			t.Errorf("subprocess mode: %q, note %q", lines[2], r.WorkingDirNote)
		}
		return
	}
	if lines[2] != "errno 30" {
		t.Errorf("a write in a read-only working_dir: %q, want errno 30 (EROFS)", lines[2])
	}
	for _, want := range []string{"read-only", "owner (uid " + strconv.Itoa(uid) + ")", "CODEXEC_WRITABLE_ROOTS"} {
		if !strings.Contains(r.WorkingDirNote, want) {
			t.Errorf("working_dir_note = %q, want it to say %q", r.WorkingDirNote, want)
		}
	}
}

// TestCallerDirPrincipals: over HTTP, a principal gets a directory owner's
// rights only below the roots the operator listed for it; elsewhere the
// code has the sandbox user's rights, and a directory it could not read is
// refused before anything runs, naming the owner, the mode and the fix.
// One subtest per row of SECURITY.md's table.
func TestCallerDirPrincipals(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a caller's private directory means something only with a root server (as deployed)")
	}
	switch testMode() {
	case "subprocess":
		t.Skip("subprocess mode runs code with the server's rights (SECURITY.md)")
	case "docker":
		t.Skip("the HTTP harness starts no docker image; docker mode's caller directories are checked by TestCallerPrivateDir")
	}
	base := t.TempDir()
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(parent, name string, mode os.FileMode) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	aliceRoot, rw := mk(base, "alice", 0o755), mk(base, "rw", 0o755)
	s := startHTTP(t, "", "CODEXEC_AUTH_TOKENS="+tokenFile(t), "CODEXEC_WRITABLE_ROOTS="+rw,
		"CODEXEC_PRINCIPAL_ROOTS=alice="+aliceRoot, "TMPDIR="+t.TempDir(), "ALLOWED_COMMANDS=pwd")
	alice := s.mustConnect(aliceToken)
	defer alice.Close()
	run := func(dir, code string) *mcp.CallToolResult {
		return callTool(t, alice, "execute_code", map[string]any{"language": "python", "working_dir": dir, "code": code})
	}
	const read = "print(open('secret.txt').read().strip())"
	refused := func(t *testing.T, dir string, uid int) {
		t.Helper()
		res := run(dir, read)
		want := "(owner uid " + strconv.Itoa(uid) + ", mode 0700) cannot be read by the sandbox user"
		if !res.IsError || !strings.Contains(text(res), want) || !strings.Contains(text(res), "CODEXEC_PRINCIPAL_ROOTS") {
			t.Errorf("want a refusal saying %q and the fix, got %s", want, text(res))
		}
		cmd := callTool(t, alice, "execute_command", map[string]any{"command": "pwd", "cwd": dir})
		if !cmd.IsError || !strings.Contains(text(cmd), want) {
			t.Errorf("execute_command: want a refusal saying %q, got %s", want, text(cmd))
		}
	}
	t.Run("another_principals_home", func(t *testing.T) {
		refused(t, callerDir(t, base, "bob-home", otherUID+1), otherUID+1)
	})
	t.Run("root_owned", func(t *testing.T) {
		refused(t, callerDir(t, base, "root-private", 0), 0)
		// Listed for alice: hers to use with root's owner rights.
		dir := callerDir(t, aliceRoot, "root-private", 0)
		var r execResult
		decodeStructured(t, run(dir, read), &r)
		if r.Stdout != callerSecret+"\n" || !strings.Contains(r.WorkingDirNote, "owner (uid 0)") {
			t.Errorf("a root-owned directory below alice's root: %+v", r)
		}
	})
	t.Run("world_readable", func(t *testing.T) {
		dir := callerDir(t, base, "world", otherUID)
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		pub := filepath.Join(dir, "pub.txt")
		if err := os.WriteFile(pub, []byte("public\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var r execResult
		decodeStructured(t, run(dir, "print(open('pub.txt').read().strip())\ntry:\n    "+read+"\nexcept OSError as e:\n    print('errno', e.errno)"), &r)
		if r.Stdout != "public\nerrno 13\n" || !strings.Contains(r.WorkingDirNote, "sandbox user's rights") {
			t.Errorf("a world-readable directory not listed for alice: %+v", r)
		}
	})
	t.Run("writable_root", func(t *testing.T) {
		dir := callerDir(t, rw, "mine", otherUID)
		var r execResult
		decodeStructured(t, run(dir, read+"\nopen('made.txt', 'w').write('x')"), &r)
		if r.Status != "success" || r.Stdout != callerSecret+"\n" || r.WorkingDirNote != "" {
			t.Fatalf("a directory below a writable root: %+v", r)
		}
		if got := ownerOf(t, filepath.Join(dir, "made.txt")); got != otherUID {
			t.Errorf("made.txt belongs to uid %d, want the directory's owner %d", got, otherUID)
		}
		// A root-owned directory below it is not entitled by the
		// server-wide root: the sandbox user's rights, and the note says so.
		var w execResult
		decodeStructured(t, run(rw, "open('x', 'w')"), &w)
		if !strings.Contains(w.WorkingDirNote, "setfacl") {
			t.Errorf("the root-owned writable root itself: %+v", w)
		}
	})
}

// TestCallerDirNoIdmap: a private directory on a file system that refuses
// idmapped mounts (ramfs) is refused before anything runs, with one error
// naming the directory, its owner and mode, why and the fix — never a raw
// permission error from inside the sandbox.
func TestCallerDirNoIdmap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a ramfs needs root")
	}
	if testMode() == "subprocess" {
		t.Skip("subprocess mode runs code with the server's rights: nothing to map")
	}
	mnt := t.TempDir()
	if err := syscall.Mount("ramfs", mnt, "ramfs", 0, "mode=0755"); err != nil {
		t.Skipf("no ramfs here: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	dir := callerDir(t, mnt, "private", otherUID)
	s := start(t, "ALLOWED_COMMANDS=pwd")
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"execute_code", map[string]any{"language": "python", "working_dir": dir, "code": "print(1)"}},
		{"execute_command", map[string]any{"command": "pwd", "cwd": dir}},
	} {
		res := s.call(call.tool, call.args)
		for _, want := range []string{dir + " (owner uid 1234, mode 0700)", "cannot be mounted with its owner's rights here", "chmod o+rx"} {
			if !res.IsError || !strings.Contains(text(res), want) {
				t.Errorf("%s: want a refusal saying %q, got %s", call.tool, want, text(res))
			}
		}
	}
}
