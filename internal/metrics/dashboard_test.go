package metrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGrafanaDashboard: the shipped dashboard (deploy/grafana) is valid
// JSON with unique panel ids, and every codexec_* series its queries read
// is one this server registers (by name, here or where app instruments
// the server), so a renamed metric cannot leave an empty panel behind.
func TestGrafanaDashboard(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/grafana/codexec-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			ID      int `json:"id"`
			Targets []struct {
				Expr  string `json:"expr"`
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	sources := registeringSources(t)
	seen := map[int]bool{}
	series := regexp.MustCompile(`codexec_([a-z_]+?)(_bucket|_count|_sum)?\{`)
	for _, p := range dash.Panels {
		if seen[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		seen[p.ID] = true
		for _, tg := range p.Targets {
			for _, m := range series.FindAllStringSubmatch(tg.Expr, -1) {
				if !strings.Contains(sources, `"`+m[1]+`"`) && !strings.Contains(sources, `"_`+m[1]+`"`) {
					t.Errorf("panel %d reads codexec_%s, which the server does not register", p.ID, m[1])
				}
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("dashboard has no panels")
	}
}

// registeringSources is the Go source that registers metrics: this
// package and app's instrumentation.
func registeringSources(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, glob := range []string{"*.go", "../app/*.go"} {
		files, _ := filepath.Glob(glob)
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(src)
		}
	}
	return b.String()
}
