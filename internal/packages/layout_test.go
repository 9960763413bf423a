package packages

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLayout(t *testing.T) {
	cases := []struct {
		lang string
		dirs []string
		want string
	}{
		{Python, []string{"/s/python", "/g/python"}, "PYTHONPATH=/s/python:/g/python"},
		{Node, []string{"/g/node"}, "NODE_PATH=/g/node/node_modules"},
		{Node, []string{"/s/node", "/g/node"}, "NODE_PATH=/s/node/node_modules:/g/node/node_modules"},
	}
	for _, c := range cases {
		if got := SearchEnv(c.lang, c.dirs...); got != c.want {
			t.Errorf("SearchEnv(%s, %v) = %q, want %q", c.lang, c.dirs, got, c.want)
		}
	}
	root := t.TempDir()
	mounts, err := Prepare(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "python"), filepath.Join(root, "node")}
	if len(mounts) != 2 || mounts[0] != want[0] || mounts[1] != want[1] {
		t.Errorf("mounts %v, want %v", mounts, want)
	}
	if st, err := os.Stat(filepath.Join(root, "node", "node_modules")); err != nil || !st.IsDir() {
		t.Errorf("node_modules not created: %v", err)
	}
}
