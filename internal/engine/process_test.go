package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPrependPaths: a session's package directories go first on the
// search paths, before the engine's own value, which leaves its place.
func TestPrependPaths(t *testing.T) {
	cases := []struct {
		name       string
		env, first []string
		want       []string
	}{
		{
			name:  "engine has a value",
			env:   []string{"HOME=/w", "PYTHONPATH=/g/py", "PATH=/usr/bin"},
			first: []string{"PYTHONPATH=/s/py", "NODE_PATH=/s/node"},
			want:  []string{"HOME=/w", "PATH=/usr/bin", "PYTHONPATH=/s/py:/g/py", "NODE_PATH=/s/node"},
		},
		{
			name: "nothing to prepend",
			env:  []string{"HOME=/w"},
			want: []string{"HOME=/w"},
		},
		{
			name:  "a variable that merely starts with the key is kept",
			env:   []string{"PYTHONPATHX=1"},
			first: []string{"PYTHONPATH=/s"},
			want:  []string{"PYTHONPATHX=1", "PYTHONPATH=/s"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, prependPaths(c.env, c.first)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
