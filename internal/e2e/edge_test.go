package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// edgeFixture is host state that callers' directories point at. Everything
// lives below one test directory standing in for system places (the tests
// never touch real ones).
type edgeFixture struct {
	base     string
	sysDir   string // root-owned 0755 with an executable, like /usr/local/bin
	private  string // root-owned 0700 holding a 0600 secret
	rwRoot   string // CODEXEC_WRITABLE_ROOTS
	rwOpen   string // world-writable dir under the writable root, holding a root-only file
	dataDir  string
	otherWS  string // another session's workspace
	mode     string
	isolated bool
}

const (
	edgeSecret     = "root-only-secret-4410"
	edgeToolScript = "#!/bin/sh\necho genuine\n"
)

// edgeCase is one attack on the edge between a caller's arguments and the
// host. refused: the call must be refused with a message containing it;
// otherwise check inspects what happened.
type edgeCase struct {
	name         string
	isolatedOnly bool
	tool         string
	args         func(f *edgeFixture) map[string]any
	refused      string
	check        func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult)
	// rootOnly, when set, is what the case needs that only a root server
	// has: the rootless pass skips it without (skipWithout).
	rootOnly *rootOnlyLimit
}

func TestEdgeAttacks(t *testing.T) {
	pinsNamespaceMode(t, "pins its sandbox modes")
	if os.Geteuid() != 0 {
		t.Skip("the edge attacks need a root server (as deployed) to mean anything")
	}
	for _, m := range sandboxModes(t) {
		t.Run(m.name, func(t *testing.T) {
			if why := modeAvailable(t, m.name, m.env...); why != "" {
				t.Skipf("%s mode unavailable on this host:\n%s", m.name, why)
			}
			f := newEdgeFixture(t)
			f.mode, f.isolated = m.name, m.name != "subprocess"
			// The fixture stands in for system places: outside the home and
			// the temp directory of the user who started the server, where a
			// local caller's own directories are used with their owner's
			// rights (callerdir_test.go).
			env := append([]string{"CODEXEC_SANDBOX_MODE=" + m.name, "CODEXEC_WRITABLE_ROOTS=" + f.rwRoot,
				"ALLOWED_COMMANDS=touch,echo,cat,mv,ls,sh", "TMPDIR=" + t.TempDir()}, m.env...)
			s := start(t, env...)
			f.dataDir = s.DataDir
			victim := s.startSession("python")
			if r, isErr := s.send(victim.SessionID, "open('mine.txt','w').write('victim-data-9981')", nil); isErr || r.Status != "success" {
				t.Fatalf("victim session: %+v", r)
			}
			f.otherWS = findFile(t, filepath.Join(f.dataDir, "sandbox"), "mine.txt")
			if err := os.Symlink(filepath.Join(f.dataDir, "sandbox"), filepath.Join(f.base, "innocent")); err != nil {
				t.Fatal(err)
			}
			before := metadata(t, f.base)
			for _, c := range edgeCases() {
				t.Run(c.name, func(t *testing.T) {
					if c.isolatedOnly && !f.isolated {
						t.Skip("subprocess mode runs code with the server's rights (SECURITY.md)")
					}
					if c.rootOnly != nil {
						skipWithout(t, *c.rootOnly, c.name)
					}
					res := s.call(c.tool, c.args(f))
					if c.refused != "" {
						if !res.IsError || !strings.Contains(text(res), c.refused) {
							t.Fatalf("want a refusal containing %q, got: %s", c.refused, text(res))
						}
						return
					}
					c.check(t, s, f, res)
				})
			}
			if f.isolated {
				if diff := cmp.Diff(before, metadata(t, f.base)); diff != "" {
					t.Errorf("host metadata changed (-before +after):\n%s", diff)
				}
			}
			if b, err := os.ReadFile(filepath.Join(f.otherWS, "mine.txt")); err != nil || string(b) != "victim-data-9981" {
				t.Errorf("another session's file changed: %q %v", b, err)
			}
		})
	}
}

func edgeCases() []edgeCase {
	code := func(dir, src string) func(*edgeFixture) map[string]any {
		return func(f *edgeFixture) map[string]any {
			return map[string]any{"language": "bash", "working_dir": f.pick(dir), "code": src}
		}
	}
	// py runs python (the docker test image has no coreutils).
	py := func(dir, src string) func(*edgeFixture) map[string]any {
		return func(f *edgeFixture) map[string]any {
			return map[string]any{"language": "python", "working_dir": f.pick(dir), "code": src}
		}
	}
	refusedDir := func(name, dir, want string) edgeCase {
		return edgeCase{name: name, tool: "execute_code", args: code(dir, "echo RAN"), refused: want}
	}
	return []edgeCase{
		{name: "write_system_dir", isolatedOnly: true, tool: "execute_code",
			args: code("sys", ": > x && echo WROTE; echo pwned > tool && echo REPLACED; echo done"),
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				r := decodeExec(t, res)
				if strings.Contains(r.Stdout, "WROTE") || strings.Contains(r.Stdout, "REPLACED") || strings.Contains(r.Stdout, "RENAMED") {
					t.Errorf("the sandbox changed a read-only working_dir: %q", r.Stdout)
				}
				if b, _ := os.ReadFile(filepath.Join(f.sysDir, "tool")); string(b) != edgeToolScript {
					t.Errorf("tool = %q", b)
				}
				if r.WorkingDirNote == "" || !strings.Contains(r.WorkingDirNote, "read-only") {
					t.Errorf("working_dir_note = %q, want it to say read-only", r.WorkingDirNote)
				}
			}},
		// python runs are served by warm runners, which get the workspace
		// bound in at take time: the same rule must hold there.
		{name: "write_system_dir_warm_python", isolatedOnly: true, tool: "execute_code",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"language": "python", "working_dir": f.sysDir, "code": "import os\n" +
					"for op in (lambda: open('x','w'), lambda: open('tool','w'), lambda: os.rename('tool','t2'), lambda: os.chmod('tool', 0o777)):\n" +
					"    try:\n        op(); print('CHANGED')\n    except OSError as e:\n        print(type(e).__name__)"}
			},
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				r := decodeExec(t, res)
				if strings.Contains(r.Stdout, "CHANGED") || r.Status != "success" {
					t.Errorf("the sandbox changed a read-only working_dir: %+v", r)
				}
				if b, _ := os.ReadFile(filepath.Join(f.sysDir, "tool")); string(b) != edgeToolScript {
					t.Errorf("tool = %q", b)
				}
			}},
		// A root-owned 0700 directory the caller is not entitled to (not
		// its own place, not listed by the operator): the code could not
		// even read it, so the call is refused before anything runs.
		{name: "read_up_by_rename_private", isolatedOnly: true, tool: "execute_code",
			args: py("private", steal("secret.txt")), refused: privateRefusal()},
		{name: "read_up_by_rename_writable_root", isolatedOnly: true, tool: "execute_code",
			args: py("rwopen", steal("root-secret")),
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				r := decodeExec(t, res)
				if strings.Contains(r.Stdout, edgeSecret) {
					t.Errorf("the sandbox read a root-only file: %q", r.Stdout)
				}
				// The directory lets anyone rename in it; the server must
				// still not copy what the sandbox user cannot read.
				if !strings.Contains(r.Stdout, "MOVED") || !slices.Contains(r.Artifacts, "stolen.txt") {
					t.Fatalf("the attack's rename did not happen, so nothing was tested: %+v\nstderr: %s", r, r.Stderr)
				}
				noDownload(t, s, r.ExecutionID, "stolen.txt")
				_ = os.Rename(filepath.Join(f.rwOpen, "stolen.txt"), filepath.Join(f.rwOpen, "root-secret"))
			}},
		{name: "writable_root_writes", isolatedOnly: true, tool: "execute_code",
			args: code("rwopen", "echo hi > made.txt && echo hi"),
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				r := decodeExec(t, res)
				if r.Stdout != "hi\n" || r.WorkingDirNote != "" {
					t.Errorf("a writable root is not writable: %+v", r)
				}
				if got := s.download(map[string]any{"execution_id": r.ExecutionID, "path": "made.txt"}); string(got) != "hi\n" {
					t.Errorf("artifact = %q", got)
				}
				_ = os.Remove(filepath.Join(f.rwOpen, "made.txt"))
			}},
		{name: "writable_root_without_permission", isolatedOnly: true, tool: "execute_code",
			args: code("rw", ": > y && echo WROTE; echo done"),
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				r := decodeExec(t, res)
				if strings.Contains(r.Stdout, "WROTE") {
					t.Errorf("the sandbox wrote where the directory's permissions forbid it: %q", r.Stdout)
				}
				if !strings.Contains(r.WorkingDirNote, "never changes them") || !strings.Contains(r.WorkingDirNote, "setfacl") {
					t.Errorf("working_dir_note = %q, want it to say how to grant access", r.WorkingDirNote)
				}
			}},
		refusedDir("sandbox_dir", "sandbox", "codexec's own data"),
		refusedDir("data_dir", "data", "codexec's own data"),
		refusedDir("log_dir", "logs", "codexec's own data"),
		// Bounded disks exist in isolated modes only.
		{name: "disks_dir", isolatedOnly: true, rootOnly: limitBy(byBoundedDisk), tool: "execute_code", args: code("disks", "echo RAN"), refused: "codexec's own data"},
		refusedDir("other_session_workspace", "otherws", "codexec's own data"),
		refusedDir("root_dir", "/", "whole host"),
		refusedDir("etc", "/etc", "forbidden"),
		refusedDir("symlink_to_sandbox_dir", "sandbox-link", "codexec's own data"),
		{name: "session_in_other_workspace", tool: "start_session", refused: "codexec's own data",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"language": "python", "working_dir": f.otherWS}
			}},
		{name: "command_cwd_data_dir", tool: "execute_command", refused: "codexec's own data",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"command": "ls", "cwd": f.dataDir}
			}},
		{name: "command_writes_system_dir", isolatedOnly: true, tool: "execute_command",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"command": "echo x > x; echo pwned > tool; echo done", "cwd": f.sysDir}
			},
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				if b, _ := os.ReadFile(filepath.Join(f.sysDir, "tool")); string(b) != edgeToolScript {
					t.Errorf("tool = %q", b)
				}
				if _, err := os.Stat(filepath.Join(f.sysDir, "x")); err == nil {
					t.Error("the command created a file in a read-only cwd")
				}
				if !strings.Contains(text(res), "cwd_note") {
					t.Errorf("no cwd_note in %s", text(res))
				}
			}},
		// A working_dir that contains codexec's data dir (like ~ holding
		// ~/.codexec): neither the code nor the server acting for it may
		// reach another session's files through it.
		{name: "data_dir_below_working_dir", isolatedOnly: true, tool: "start_session",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"language": "python", "working_dir": filepath.Dir(f.dataDir)}
			},
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				var out startOut
				decodeStructured(t, res, &out)
				defer s.call("close_session", map[string]any{"session_id": out.SessionID})
				rel, _ := filepath.Rel(filepath.Dir(f.dataDir), filepath.Join(f.otherWS, "mine.txt"))
				r, _ := s.send(out.SessionID, "try:\n    print(open("+pyQuote(rel)+").read())\nexcept OSError as e:\n    print(type(e).__name__)", nil)
				if strings.Contains(r.Stdout, "victim-data") {
					t.Errorf("the code read another session's file through its working_dir: %q", r.Stdout)
				}
				dl := s.call("download_file", map[string]any{"session_id": out.SessionID, "path": rel})
				if !dl.IsError || strings.Contains(text(dl), "victim-data") {
					t.Errorf("download of another session's file through a working_dir: %s", text(dl))
				}
				l := s.call("list_files", map[string]any{"session_id": out.SessionID, "recursive": true})
				if strings.Contains(text(l), "mine.txt") {
					t.Errorf("list_files shows another session's files: %s", text(l))
				}
			}},
		{name: "upload_into_read_only_session", isolatedOnly: true, tool: "start_session",
			args: func(f *edgeFixture) map[string]any {
				return map[string]any{"language": "python", "working_dir": f.sysDir}
			},
			check: func(t *testing.T, s *server, f *edgeFixture, res *mcp.CallToolResult) {
				var out startOut
				decodeStructured(t, res, &out)
				_, up := s.upload(map[string]any{"session_id": out.SessionID, "path": "planted", "content": "x"})
				if !up.IsError || !strings.Contains(text(up), "read-only") {
					t.Errorf("upload into a read-only working_dir: %s", text(up))
				}
				if _, err := os.Stat(filepath.Join(f.sysDir, "planted")); err == nil {
					t.Error("the server wrote into a read-only working_dir")
				}
				s.call("close_session", map[string]any{"session_id": out.SessionID})
			}},
	}
}

// steal renames name to stolen.txt and tries to read it.
func steal(name string) string {
	return "import os\ntry:\n    os.rename(" + pyQuote(name) + ", 'stolen.txt'); print('MOVED')\nexcept OSError as e:\n    print(e)\n" +
		"for n in ('stolen.txt', " + pyQuote(name) + "):\n    try:\n        print(open(n).read())\n    except OSError as e:\n        print(e)\n"
}

// pick names a fixture directory.
func (f *edgeFixture) pick(name string) string {
	switch name {
	case "sys":
		return f.sysDir
	case "private":
		return f.private
	case "rwopen":
		return f.rwOpen
	case "rw":
		return f.rwRoot
	case "sandbox":
		return filepath.Join(f.dataDir, "sandbox")
	case "data":
		return f.dataDir
	case "logs":
		return filepath.Join(f.dataDir, "logs")
	case "disks":
		return filepath.Join(f.dataDir, "sandbox", ".disks")
	case "otherws":
		return f.otherWS
	case "sandbox-link":
		return filepath.Join(f.base, "innocent")
	}
	return name
}

func newEdgeFixture(t *testing.T) *edgeFixture {
	base := t.TempDir()
	f := &edgeFixture{base: base, sysDir: filepath.Join(base, "bin"), private: filepath.Join(base, "private"),
		rwRoot: filepath.Join(base, "rw")}
	f.rwOpen = filepath.Join(f.rwRoot, "open")
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Dir(base), 0o755}, {base, 0o755}, {f.sysDir, 0o755}, {f.private, 0o700}, {f.rwRoot, 0o755}, {f.rwOpen, 0o777}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range []struct {
		path, data string
		mode       os.FileMode
	}{{filepath.Join(f.sysDir, "tool"), edgeToolScript, 0o755}, {filepath.Join(f.private, "secret.txt"), edgeSecret, 0o600},
		{filepath.Join(f.rwOpen, "root-secret"), edgeSecret, 0o600}} {
		if err := os.WriteFile(w.path, []byte(w.data), w.mode); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// metadata lists every entry below base with its owner, mode and extended
// attributes (ACLs among them).
func metadata(t *testing.T, base string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) != nil {
			return nil
		}
		out[p] = fmt.Sprintf("uid=%d gid=%d mode=%o xattrs=%v", st.Uid, st.Gid, st.Mode, xattrs(p))
		return nil
	})
	return out
}

func xattrs(p string) []string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil || n == 0 {
		return nil
	}
	names := strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00")
	slices.Sort(names)
	return names
}

// findFile returns the directory below root holding a file named name.
func findFile(t *testing.T, root, name string) string {
	t.Helper()
	var dir string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == name && !d.IsDir() {
			dir = filepath.Dir(p)
			return filepath.SkipAll
		}
		return nil
	})
	if dir == "" {
		t.Fatalf("no %s below %s", name, root)
	}
	return dir
}

func decodeExec(t *testing.T, res *mcp.CallToolResult) execResult {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(res))
	}
	var r execResult
	decodeStructured(t, res, &r)
	return r
}

// noDownload asserts the run's file name was neither kept nor served.
func noDownload(t *testing.T, s *server, execID, name string) {
	t.Helper()
	res := s.call("download_file", map[string]any{"execution_id": execID, "path": name})
	if !res.IsError || strings.Contains(text(res), edgeSecret) {
		t.Errorf("download of %s served: %s", name, text(res))
	}
	uri := "codexec://executions/" + execID + "/files/" + name
	if rr, err := s.Session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err == nil {
		t.Errorf("resources/read %s served %d contents", uri, len(rr.Contents))
	}
}

// privateRefusal is how a refusal names a root-owned 0700 directory: a
// rootless server, in a user namespace of its own, cannot tell root from
// any other account that is not its user.
func privateRefusal() string {
	if rootlessMode() {
		return "(owned by another account, mode 0700) cannot be read by the sandbox user"
	}
	return "(owner uid 0, mode 0700) cannot be read by the sandbox user"
}
