package version

import (
	"runtime/debug"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromBuildInfo(t *testing.T) {
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want Info
	}{
		{"no build info", nil, false, Info{Version: "devel", Commit: "unknown", Date: "unknown"}},
		{"work tree build", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, Info{Version: "devel", Commit: "unknown", Date: "unknown"}},
		{"go install @version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-25T14:00:00Z"}, {Key: "vcs.modified", Value: "true"}}},
			true, Info{Version: "v1.2.3", Commit: "abc123", Date: "2026-11-25T14:00:00Z", Modified: true}},
	}
	for _, c := range cases {
		if diff := cmp.Diff(c.want, FromBuildInfo(c.bi, c.ok)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, diff)
		}
	}
}
