package packages

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckProgram(t *testing.T) {
	dir := t.TempDir()
	// A python distribution and a node package, installed the way the installers lay them out.
	info := filepath.Join(dir, "py", "codexec_present-1.0.dist-info")
	nodePkg := filepath.Join(dir, "node", "node_modules", "codexec-present")
	for _, d := range []string{info, nodePkg} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.WriteFile(filepath.Join(info, "METADATA"), []byte("Metadata-Version: 2.1\nName: codexec-present\nVersion: 1.0\n"), 0o644)
	_ = os.WriteFile(filepath.Join(nodePkg, "package.json"), []byte(`{"name":"codexec-present","version":"1.0.0","main":"index.js"}`), 0o644)
	_ = os.WriteFile(filepath.Join(nodePkg, "index.js"), []byte("module.exports = 1\n"), 0o644)
	cases := []struct {
		lang, interp string
		env          string
	}{
		{Python, "python3", "PYTHONPATH=" + filepath.Join(dir, "py")},
		{Node, "node", "NODE_PATH=" + filepath.Join(dir, "node", "node_modules")},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			interp := "/usr/bin/" + c.interp
			if _, err := os.Stat(interp); err != nil {
				t.Skip(interp + " not installed")
			}
			code, err := CheckProgram(c.lang, []string{"codexec-present>=1", "codexec-absent", "codexec-absent2"})
			if c.lang == Node {
				code, err = CheckProgram(c.lang, []string{"codexec-present@1", "codexec-absent", "@codexec/absent2"})
			}
			if err != nil {
				t.Fatal(err)
			}
			flag := map[string]string{Python: "-c", Node: "-e"}[c.lang]
			cmd := exec.Command(interp, flag, code)
			cmd.Env = []string{c.env, "PATH=/usr/bin:/bin"}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			got, err := ParseMissing(string(out))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"codexec-absent", "codexec-absent2"}
			if c.lang == Node {
				want[1] = "@codexec/absent2"
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := CheckProgram(Python, []string{"x'); import os; os.system('id')#"}); err == nil {
		t.Error("unsafe name accepted")
	}
	if got := InstallHint(Python, "pandas", ""); got != `install_package {"language":"python","package":"pandas"}` {
		t.Errorf("hint %s", got)
	}
}
