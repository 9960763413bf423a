package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type saveOut struct {
	Success  bool   `json:"success"`
	ScriptID string `json:"script_id"`
	Name     string `json:"name"`
	Path     string `json:"path"`
	Version  int    `json:"version"`
	SavedAt  string `json:"saved_at"`
}

type scriptOut struct {
	Success           bool     `json:"success"`
	ScriptID          string   `json:"script_id"`
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	Language          string   `json:"language"`
	Code              string   `json:"code"`
	Tags              []string `json:"tags"`
	Packages          []string `json:"packages"`
	SourceExecutionID string   `json:"source_execution_id"`
	Version           int      `json:"version"`
	Versions          []int    `json:"versions"`
	RunCount          int      `json:"run_count"`
	LastRunAt         *string  `json:"last_run_at"`
	LastRunSuccess    *bool    `json:"last_run_success"`
}

type summaryOut struct {
	Name      string   `json:"name"`
	Language  string   `json:"language"`
	Tags      []string `json:"tags"`
	Relevance string   `json:"relevance"`
}

type listOut struct {
	Scripts    []summaryOut `json:"scripts"`
	TotalCount int          `json:"total_count"`
}

type searchOut struct {
	Results    []summaryOut `json:"results"`
	TotalCount int          `json:"total_count"`
}

func names(s []summaryOut) []string {
	out := []string{}
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

const argvScript = "import sys\nprint('args:', ' '.join(sys.argv[1:]))\n"

func TestScriptsLifecycle(t *testing.T) {
	s := start(t)
	r, res := s.exec(map[string]any{"language": "python", "code": argvScript})
	if res.IsError || r.Status != "success" {
		t.Fatalf("execute: %s", text(res))
	}
	var sv saveOut
	res = s.callInto("save_script", map[string]any{"name": "echo-args", "description": "Prints its command line arguments",
		"language": "python", "code": argvScript, "tags": []string{"demo", "argv"}, "source_execution_id": r.ExecutionID}, &sv)
	if res.IsError || !sv.Success || sv.Version != 1 || !strings.HasPrefix(sv.ScriptID, "script_") {
		t.Fatalf("save: %+v %s", sv, text(res))
	}
	wantPath := filepath.Join(s.DataDir, "scripts", "echo-args", "script.py")
	if sv.Path != wantPath {
		t.Errorf("path %q, want %q", sv.Path, wantPath)
	}
	for _, f := range []string{"index.json", "echo-args/metadata.json", "echo-args/script.py"} {
		if _, err := os.Stat(filepath.Join(s.DataDir, "scripts", f)); err != nil {
			t.Errorf("storage layout: %v", err)
		}
	}
	var got scriptOut
	s.callInto("get_script", map[string]any{"name": "echo-args"}, &got)
	if got.Code != argvScript || got.SourceExecutionID != r.ExecutionID || got.Language != "python" || got.RunCount != 0 {
		t.Errorf("get: %+v", got)
	}
	// run with args: same shape as execute_code, argv passed through.
	run, res := s.runScript(map[string]any{"name": "echo-args", "args": []string{"a b", "--x", "ü"}})
	if res.IsError || run.Status != "success" || run.Stdout != "args: a b --x ü\n" || !strings.HasPrefix(run.ExecutionID, "exec_") {
		t.Fatalf("run: %+v %s", run, text(res))
	}
	s.callInto("get_script", map[string]any{"name": "echo-args"}, &got)
	if got.RunCount != 1 || got.LastRunAt == nil || got.LastRunSuccess == nil || !*got.LastRunSuccess {
		t.Errorf("run tracking: %+v", got)
	}
	// a failing run is tracked as such
	s.callInto("save_script", map[string]any{"name": "fails", "language": "bash", "code": "echo oops >&2; exit 3",
		"description": "always fails", "tags": []string{"Finance"}}, &sv)
	run, _ = s.runScript(map[string]any{"name": "fails"})
	if run.Status != "execution_error" || run.ExitCode == nil || *run.ExitCode != 3 {
		t.Errorf("failing run: %+v", run)
	}
	s.callInto("get_script", map[string]any{"name": "fails"}, &got)
	if got.RunCount != 1 || got.LastRunSuccess == nil || *got.LastRunSuccess {
		t.Errorf("failing run tracking: %+v", got)
	}

	var ls listOut
	s.callInto("list_scripts", map[string]any{}, &ls)
	if diff := cmp.Diff([]string{"echo-args", "fails"}, names(ls.Scripts)); diff != "" || ls.TotalCount != 2 {
		t.Errorf("list (-want +got)\n%s", diff)
	}
	s.callInto("list_scripts", map[string]any{"language": "bash"}, &ls)
	if diff := cmp.Diff([]string{"fails"}, names(ls.Scripts)); diff != "" {
		t.Errorf("list language (-want +got)\n%s", diff)
	}
	s.callInto("list_scripts", map[string]any{"tag": "finance"}, &ls)
	if diff := cmp.Diff([]string{"fails"}, names(ls.Scripts)); diff != "" {
		t.Errorf("list tag (-want +got)\n%s", diff)
	}
	cases := []struct{ q, name, rel string }{
		{"echo", "echo-args", "name_match"},
		{"argv", "echo-args", "tag_match"},
		{"command line", "echo-args", "description_match"},
		{"bash", "fails", "language_match"},
	}
	for _, c := range cases {
		var so searchOut
		s.callInto("search_scripts", map[string]any{"query": c.q}, &so)
		if len(so.Results) == 0 || so.Results[0].Name != c.name || so.Results[0].Relevance != c.rel {
			t.Errorf("search %q: %+v", c.q, so)
		}
	}
}

func (s *server) runScript(args map[string]any) (execResult, *mcp.CallToolResult) {
	s.t.Helper()
	var r execResult
	res := s.callInto("run_script", args, &r)
	return r, res
}

func TestScriptsNameValidationWritesNothing(t *testing.T) {
	s := start(t)
	root := filepath.Join(s.DataDir, "scripts")
	bad := []string{"../evil", "a/b", `a\b`, "..", ".hidden", "x..y", "", strings.Repeat("a", 101), "spa ce", "index.json", "/abs"}
	for _, name := range bad {
		res := s.call("save_script", map[string]any{"name": name, "language": "bash", "code": "echo hi"})
		if !res.IsError {
			t.Errorf("name %q accepted", name)
		}
	}
	var entries []string
	_ = filepath.Walk(s.DataDir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.Contains(p, "evil") || strings.Contains(p, "hidden") {
			entries = append(entries, p)
		}
		return nil
	})
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		entries = append(entries, e.Name())
	}
	if len(entries) != 0 {
		t.Errorf("rejected names wrote files: %v", entries)
	}
	if res := s.call("get_script", map[string]any{"name": "../scripts"}); !res.IsError {
		t.Errorf("get with traversal accepted")
	}
	if res := s.call("run_script", map[string]any{"name": "../../bin/sh"}); !res.IsError {
		t.Errorf("run with traversal accepted")
	}
}

func TestScriptsHandEditsAndVersions(t *testing.T) {
	s := start(t)
	root := filepath.Join(s.DataDir, "scripts")
	for _, n := range []string{"keep", "gone"} {
		if res := s.call("save_script", map[string]any{"name": n, "language": "bash", "code": "echo " + n}); res.IsError {
			t.Fatal(text(res))
		}
	}
	// hand delete and hand edit, behind the server's back
	if err := os.RemoveAll(filepath.Join(root, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "keep", "script.sh"), []byte("echo edited by hand"), 0o644); err != nil {
		t.Fatal(err)
	}
	// a hand-made script without metadata.json
	_ = os.MkdirAll(filepath.Join(root, "handmade"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "handmade", "script.py"), []byte("print('hand')"), 0o644)
	var ls listOut
	s.callInto("list_scripts", map[string]any{}, &ls)
	if diff := cmp.Diff([]string{"handmade", "keep"}, names(ls.Scripts)); diff != "" {
		t.Errorf("list after hand edits (-want +got)\n%s", diff)
	}
	idx, _ := os.ReadFile(filepath.Join(root, "index.json"))
	if strings.Contains(string(idx), `"gone"`) || !strings.Contains(string(idx), `"handmade"`) {
		t.Errorf("index.json not rebuilt: %s", idx)
	}
	run, res := s.runScript(map[string]any{"name": "keep"})
	if run.Stdout != "edited by hand\n" {
		t.Errorf("hand-edited code not used: %+v %s", run, text(res))
	}
	run, _ = s.runScript(map[string]any{"name": "handmade"})
	if run.Stdout != "hand\n" {
		t.Errorf("hand-made script: %+v", run)
	}
	if res := s.call("get_script", map[string]any{"name": "gone"}); !res.IsError {
		t.Errorf("deleted script still readable")
	}

	// versioning: two more saves (one switching language) keep the older code
	var sv saveOut
	s.callInto("save_script", map[string]any{"name": "keep", "language": "bash", "code": "echo v2"}, &sv)
	if sv.Version != 2 {
		t.Errorf("second save version %d", sv.Version)
	}
	s.callInto("save_script", map[string]any{"name": "keep", "language": "python", "code": "print('v3')"}, &sv)
	var got scriptOut
	s.callInto("get_script", map[string]any{"name": "keep"}, &got)
	if got.Version != 3 || got.Code != "print('v3')" || got.Language != "python" || !slices.Equal(got.Versions, []int{1, 2, 3}) || got.RunCount != 1 {
		t.Errorf("current: %+v", got)
	}
	s.callInto("get_script", map[string]any{"name": "keep", "version": 1}, &got)
	if got.Version != 1 || got.Code != "echo edited by hand" || got.Language != "bash" {
		t.Errorf("version 1: %+v", got)
	}
	s.callInto("get_script", map[string]any{"name": "keep", "version": 2}, &got)
	if got.Code != "echo v2" {
		t.Errorf("version 2: %+v", got)
	}
	if _, err := os.Stat(filepath.Join(root, "keep", "script.sh")); !os.IsNotExist(err) {
		t.Errorf("old-language code file left beside the new one: %v", err)
	}
	if res := s.call("get_script", map[string]any{"name": "keep", "version": 9}); !res.IsError {
		t.Errorf("missing version accepted")
	}
}

func TestScriptsPreflightMissingPackages(t *testing.T) {
	s := start(t)
	cases := []struct{ lang, code, ok, missing string }{
		{"python", "import json", "json", "codexec_no_such_pkg_1"},
		{"node", "require('fs')", "fs", "codexec-no-such-pkg-2"},
		{"bash", "true", "sh", "codexec-no-such-cmd-3"},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			name := "pf-" + c.lang
			s.call("save_script", map[string]any{"name": name, "language": c.lang, "code": c.code, "packages": []string{c.ok, c.missing}})
			res := s.call("run_script", map[string]any{"name": name})
			msg := text(res)
			if !res.IsError || !strings.Contains(msg, c.missing) || strings.Contains(msg, `"`+c.ok+`"`) ||
				!strings.Contains(msg, "install_package") || !strings.Contains(msg, "MISSING_PACKAGES") {
				t.Errorf("pre-flight: isError=%v %s", res.IsError, msg)
			}
			var got scriptOut
			s.callInto("get_script", map[string]any{"name": name}, &got)
			if got.RunCount != 0 {
				t.Errorf("script ran despite missing packages")
			}
			s.call("save_script", map[string]any{"name": name, "language": c.lang, "code": c.code, "packages": []string{c.ok}})
			run, res := s.runScript(map[string]any{"name": name})
			if res.IsError || run.Status != "success" {
				t.Errorf("with present packages: %+v %s", run, text(res))
			}
		})
	}
}
