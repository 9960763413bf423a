package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/codexec/codexec/internal/scripts"
	"github.com/codexec/codexec/internal/tenant"
	"github.com/google/go-cmp/cmp"
)

// view is what a step's answer is compared by: everything but the random
// script ids and the clock.
type view struct {
	Name, Language, Description, Code string
	Version                           int
	Versions                          []int
	Tags, Packages                    []string
	RunCount                          int
	LastRunSuccess                    *bool
	Err                               string
}

func viewOf(sc scripts.Script, err error) view {
	if err != nil {
		return view{Err: errKind(err)}
	}
	return view{Name: sc.Name, Language: sc.Language, Description: sc.Description, Code: sc.Code, Version: sc.Version,
		Versions: sc.Versions, Tags: sc.Tags, Packages: sc.Packages, RunCount: sc.RunCount, LastRunSuccess: sc.LastRunSuccess}
}

func errKind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, scripts.ErrNotFound):
		return "not found"
	case errors.Is(err, scripts.ErrInvalid):
		return "invalid"
	}
	return "error: " + err.Error()
}

func names(ms []scripts.Meta, err error) []string {
	if err != nil {
		return []string{errKind(err)}
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func ranked(ms []scripts.Match, err error) []string {
	if err != nil {
		return []string{"error"}
	}
	out := []string{}
	for _, m := range ms {
		out = append(out, m.Name+":"+m.Relevance)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestScripts runs one sequence of library calls against every store and
// checks each answer.
func TestScripts(t *testing.T) {
	other := tenant.With(context.Background(), "alice@example.com")
	save := func(name, lang, desc, code string, tags ...string) func(context.Context, scripts.Library) any {
		return func(ctx context.Context, l scripts.Library) any {
			return viewOf(l.Save(ctx, scripts.SaveInput{Name: name, Language: lang, Description: desc, Code: code, Tags: tags}))
		}
	}
	get := func(name string, v int) func(context.Context, scripts.Library) any {
		return func(ctx context.Context, l scripts.Library) any { return viewOf(l.Get(ctx, name, v)) }
	}
	steps := []struct {
		name string
		ctx  context.Context
		do   func(context.Context, scripts.Library) any
		want any
	}{
		{"save first", nil, save("fetch_prices", "py", "download prices", "print(1)", "finance", "http"),
			view{Name: "fetch_prices", Language: "python", Description: "download prices", Code: "print(1)", Version: 1, Versions: []int{1}, Tags: []string{"finance", "http"}, Packages: []string{}}},
		{"save second version", nil, save("fetch_prices", "python", "download prices daily", "print(2)", "finance"),
			view{Name: "fetch_prices", Language: "python", Description: "download prices daily", Code: "print(2)", Version: 2, Versions: []int{1, 2}, Tags: []string{"finance"}, Packages: []string{}}},
		{"save other language", nil, save("cleanup", "bash", "remove temp files", "rm -f /tmp/x", "ops"),
			view{Name: "cleanup", Language: "bash", Description: "remove temp files", Code: "rm -f /tmp/x", Version: 1, Versions: []int{1}, Tags: []string{"ops"}, Packages: []string{}}},
		{"save node", nil, save("Report-2", "js", "price report", "console.log(1)"),
			view{Name: "Report-2", Language: "node", Description: "price report", Code: "console.log(1)", Version: 1, Versions: []int{1}, Tags: []string{}, Packages: []string{}}},
		{"invalid name", nil, save("../x", "py", "", "x"), view{Err: "invalid"}},
		{"invalid language", nil, save("x", "cobol", "", "x"), view{Err: "invalid"}},
		{"empty code", nil, save("x", "py", "", ""), view{Err: "invalid"}},
		{"get current", nil, get("fetch_prices", 0),
			view{Name: "fetch_prices", Language: "python", Description: "download prices daily", Code: "print(2)", Version: 2, Versions: []int{1, 2}, Tags: []string{"finance"}, Packages: []string{}}},
		{"get version 1", nil, get("fetch_prices", 1),
			view{Name: "fetch_prices", Language: "python", Description: "download prices", Code: "print(1)", Version: 1, Versions: []int{1, 2}, Tags: []string{"finance", "http"}, Packages: []string{}}},
		{"get missing version", nil, get("fetch_prices", 7), view{Err: "not found"}},
		{"get missing script", nil, get("nope", 0), view{Err: "not found"}},
		{"list all", nil, func(ctx context.Context, l scripts.Library) any { return names(l.List(ctx, "", "")) },
			[]string{"Report-2", "cleanup", "fetch_prices"}},
		{"list by language", nil, func(ctx context.Context, l scripts.Library) any { return names(l.List(ctx, "python", "")) },
			[]string{"fetch_prices"}},
		{"list by tag, any case", nil, func(ctx context.Context, l scripts.Library) any { return names(l.List(ctx, "", "OPS")) },
			[]string{"cleanup"}},
		{"search ranks name over description", nil, func(ctx context.Context, l scripts.Library) any { return ranked(l.Search(ctx, "price")) },
			[]string{"fetch_prices:name_match", "Report-2:description_match"}},
		{"search by tag", nil, func(ctx context.Context, l scripts.Library) any { return ranked(l.Search(ctx, "ops bash")) },
			[]string{"cleanup:tag_match"}},
		{"search without words", nil, func(ctx context.Context, l scripts.Library) any { return ranked(l.Search(ctx, "  ..")) },
			[]string{"error"}},
		{"record run", nil, func(ctx context.Context, l scripts.Library) any {
			if err := l.RecordRun(ctx, "cleanup", time.Now(), true); err != nil {
				return err.Error()
			}
			return viewOf(l.Get(ctx, "cleanup", 0))
		}, view{Name: "cleanup", Language: "bash", Description: "remove temp files", Code: "rm -f /tmp/x", Version: 1, Versions: []int{1}, Tags: []string{"ops"}, Packages: []string{}, RunCount: 1, LastRunSuccess: ptr(true)}},
		{"record run of missing script", nil, func(ctx context.Context, l scripts.Library) any {
			return errKind(l.RecordRun(ctx, "nope", time.Now(), false))
		},
			"not found"},
		{"another principal sees none", other, func(ctx context.Context, l scripts.Library) any { return names(l.List(ctx, "", "")) },
			[]string{}},
		{"another principal's own script", other, save("cleanup", "sh", "mine", "true"),
			view{Name: "cleanup", Language: "bash", Description: "mine", Code: "true", Version: 1, Versions: []int{1}, Tags: []string{}, Packages: []string{}}},
		{"first principal's script unchanged", nil, func(ctx context.Context, l scripts.Library) any {
			v := viewOf(l.Get(ctx, "cleanup", 0))
			return v.Description
		}, "remove temp files"},
	}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			libs := b.open(t).scripts
			for _, st := range steps {
				ctx := st.ctx
				if ctx == nil {
					ctx = context.Background()
				}
				lib, err := libs.For(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(st.want, st.do(ctx, lib)); diff != "" {
					t.Errorf("%s: (-want +got)\n%s", st.name, diff)
				}
			}
		})
	}
}

// TestScriptsConcurrentSaves: saves of one name racing each other (on a
// shared store: from several replicas) each become a version; none is
// overwritten.
func TestScriptsConcurrentSaves(t *testing.T) {
	const n = 8
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			lib, err := b.open(t).scripts.For(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					if _, err := lib.Save(ctx, scripts.SaveInput{Name: "race", Language: "python", Code: fmt.Sprintf("print(%d)", i)}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			cur, err := lib.Get(ctx, "race", 0)
			if err != nil {
				t.Fatal(err)
			}
			codes := map[string]bool{}
			for _, v := range cur.Versions {
				sc, err := lib.Get(ctx, "race", v)
				if err != nil {
					t.Fatal(err)
				}
				codes[sc.Code] = true
			}
			if len(cur.Versions) != n || len(codes) != n {
				t.Errorf("%d saves: versions %v holding %d distinct codes, want %d of each", n, cur.Versions, len(codes), n)
			}
		})
	}
}
