package helmchart

import (
	"flag"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the kustomize base from the chart")

// kustomizeBase is the directory of the kustomize base generated from the chart.
const kustomizeBase = "../kustomize/base/"

// TestKustomizeBase: the kustomize base's codexec.yaml is exactly the chart
// rendered with the base's chart-values.yaml, so the two cannot drift apart;
// its objects pass the same strict decoding as the chart tests'.
func TestKustomizeBase(t *testing.T) {
	values, err := os.ReadFile(kustomizeBase + "chart-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files, err := renderRelease("codexec", string(values))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	want := joinManifests(files)
	if *update {
		if err := os.WriteFile(kustomizeBase+"codexec.yaml", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(kustomizeBase + "codexec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Fatalf("codexec.yaml is not the chart's rendering; regenerate it with go test -run TestKustomizeBase -update (-want +got):\n%s", diff)
	}
	r := rendered{}
	decodeManifest(t, "codexec.yaml", string(got), r)
	if _, ok := r["Deployment/codexec"]; !ok {
		t.Errorf("no Deployment/codexec in the base: %v", r.keys())
	}
}

// joinManifests concatenates the rendered templates in file-name order.
func joinManifests(files map[string]string) string {
	var b strings.Builder
	b.WriteString("# Generated from deploy/helm/codexec with chart-values.yaml; do not edit.\n")
	b.WriteString("# Regenerate: cd deploy/helm && go test -run TestKustomizeBase -update\n")
	for _, name := range slices.Sorted(maps.Keys(files)) {
		text := strings.TrimSpace(files[name])
		if !strings.HasSuffix(name, ".yaml") || text == "" {
			continue
		}
		b.WriteString("---\n# Source: " + name + "\n" + text + "\n")
	}
	return b.String()
}
